-- Verify flakeid_events:events on pg: events.id is a flakeid with DEFAULT
-- nextflake() (1/0 fails where it is not).
BEGIN;

SELECT id, body FROM events WHERE false;
SELECT 1 / count(*)
  FROM pg_attribute JOIN pg_attrdef ON adrelid = attrelid AND adnum = attnum
 WHERE attrelid = 'events'::regclass AND attname = 'id'
   AND atttypid = 'flakeid'::regtype AND pg_get_expr(adbin, adrelid) = 'nextflake()';

ROLLBACK;
