-- Revert flakeid_events:events from pg: the table first, as the extension
-- cannot go while a column has its type.
BEGIN;

DROP TABLE events;
DROP EXTENSION flakeid;

COMMIT;
