# ActiveRecord does not know the flakeid type: it reads a flakeid column as
# a String (exact) and warns "unknown OID ...: failed to recognize type of
# 'id'".  The attribute makes Event's key an Integer; Order's bigint key is
# one already.
require "active_record"

class Event < ActiveRecord::Base
  attribute :id, ActiveRecord::Type::BigInteger.new
end

class Order < ActiveRecord::Base
end
