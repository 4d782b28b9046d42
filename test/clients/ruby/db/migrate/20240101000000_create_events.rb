# The flakeid extension and two tables whose keys it fills in: events over a
# flakeid column, orders over a bigint one.  Rolling back drops the tables,
# then the extension.
class CreateEvents < ActiveRecord::Migration[6.1]
  def change
    enable_extension "flakeid"
    create_table :events, id: false do |t|
      t.column :id, :flakeid, primary_key: true, default: -> { "nextflake()" }
      t.text :body, null: false
    end
    create_table :orders, id: :bigint, default: -> { "nextflake()" } do |t|
      t.text :item, null: false
    end
  end
end
