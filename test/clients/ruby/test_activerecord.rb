# flakeid with ActiveRecord, without a Rails application: as the
# application's role (FLAKE_APP_USER, no superuser) that owns its database
# flakeid_activerecord, the migration of db/migrate makes the extension and
# the tables of models.rb; saved keys are exact, decode to this server's
# node and now, and survive a rollback and a second migration.  schema.rb's
# dumper cannot dump the flakeid table; structure.sql (pg_dump) can, and
# loads into the new database flakeid_activerecord_sql.
require "minitest/autorun"
require "stringio"
require "tmpdir"
require_relative "models"

SERVER_NODE_ID = 42 # test/flakeid.conf
MIGRATIONS = File.join(__dir__, "db", "migrate")

def connect(database)
  ActiveRecord::Base.establish_connection(
    adapter: "postgresql", database: database, username: ENV.fetch("FLAKE_APP_USER")
  )
end

# ActiveRecord 7.1 made the schema_migrations table the context's own
def migrations
  if ActiveRecord.version >= Gem::Version.new("7.1")
    ActiveRecord::MigrationContext.new(MIGRATIONS)
  else
    ActiveRecord::MigrationContext.new(MIGRATIONS, ActiveRecord::SchemaMigration)
  end
end

# what SchemaDumper.dump takes: a connection, a connection pool from 7.2 on
def dump_source
  if ActiveRecord.version >= Gem::Version.new("7.2")
    ActiveRecord::Base.connection_pool
  else
    ActiveRecord::Base.connection
  end
end

ActiveRecord::Migration.verbose = false
connect("flakeid_activerecord")
migrations.migrate

class ActiveRecordTest < Minitest::Test
  def sql(query)
    ActiveRecord::Base.connection.select_one(query)
  end

  # Saves three rows of the model; their keys, checked.
  def save_three(model, column)
    keys = %w[one two three].map { |value| model.create!(column => value).id }
    keys.each do |id|
      assert_kind_of Integer, id
      assert_operator id, :>, 2**53
      assert_equal [SERVER_NODE_ID, true],
                   model.where(id: id).pluck(Arel.sql("flakeid_node(id::flakeid)"),
                                             Arel.sql("flakeid_timestamp(id::flakeid) > now() - interval '1 minute'")).first
    end
    assert_equal keys.sort, keys, "ascending"
    assert_equal "two", model.find(keys[1]).public_send(column)
    assert_equal keys, model.where(id: keys).order(:id).pluck(:id)
    keys
  end

  def test_the_role_owns_the_database_and_is_not_a_superuser
    assert_equal({ "rolsuper" => false, "owner" => true },
                 sql("SELECT r.rolsuper, pg_get_userbyid(d.datdba) = current_user AS owner
                        FROM pg_roles r, pg_database d
                       WHERE r.rolname = current_user AND d.datname = current_database()"))
  end

  def test_the_migration_made_a_flakeid_and_a_bigint_key
    assert_equal({ "events" => "flakeid nextflake()", "orders" => "bigint nextflake()" },
                 %w[events orders].to_h { |table|
                   [table, sql("SELECT format_type(atttypid, atttypmod) || ' ' || pg_get_expr(adbin, adrelid) AS k
                                  FROM pg_attribute JOIN pg_attrdef ON adrelid = attrelid AND adnum = attnum
                                 WHERE attrelid = '#{table}'::regclass AND attname = 'id'")["k"]]
                 })
  end

  def test_event_keys_are_exact_integers
    save_three(Event, :body)
  end

  def test_order_keys_are_exact_integers
    save_three(Order, :item)
  end

  def test_without_the_attribute_a_flakeid_key_is_an_exact_string
    plain = Class.new(ActiveRecord::Base) { self.table_name = "events" }
    event = plain.create!(body: "plain")
    assert_kind_of String, event.id
    assert_equal event.id, sql("SELECT max(id)::text AS id FROM events")["id"]
    assert_equal Integer(event.id), Event.find(event.id).id
  end

  def test_schema_rb_cannot_dump_the_flakeid_table
    dump = StringIO.new
    ActiveRecord::SchemaDumper.dump(dump_source, dump)
    assert_includes dump.string, %(enable_extension "flakeid")
    assert_includes dump.string, <<~RUBY
      # Could not dump table "events" because of following StandardError
      #   Unknown type 'flakeid' for column 'id'
    RUBY
    assert_includes dump.string,
                    %(create_table "orders", id: :bigint, default: -> { "nextflake()" }, force: :cascade do |t|)
  end

  def test_structure_sql_dumps_and_loads_the_flakeid_table
    Dir.mktmpdir do |dir|
      file = File.join(dir, "structure.sql")
      config = ActiveRecord::Base.connection_db_config
      ActiveRecord::Tasks::DatabaseTasks.structure_dump(config, file)
      structure = File.read(file)
      assert_includes structure, "CREATE EXTENSION IF NOT EXISTS flakeid"
      assert_includes structure, "id public.flakeid DEFAULT public.nextflake() NOT NULL"
      begin
        connect("flakeid_activerecord_sql")
        ActiveRecord::Tasks::DatabaseTasks.structure_load(ActiveRecord::Base.connection_db_config, file)
        Event.reset_column_information
        save_three(Event, :body)
      ensure
        ActiveRecord::Base.establish_connection(config)
      end
    end
  end

  def test_rollback_then_migrate_again
    before = save_three(Event, :body)
    migrations.rollback
    assert_equal({ "extension" => nil, "events" => nil, "orders" => nil },
                 sql("SELECT (SELECT extversion FROM pg_extension WHERE extname = 'flakeid') AS extension,
                             to_regclass('events')::text AS events, to_regclass('orders')::text AS orders"))
    migrations.migrate
    [Event, Order].each(&:reset_column_information)
    again = save_three(Event, :body)
    assert_operator again.first, :>, before.last, "keys after the second migration are above the first ones"
  end
end
