-- Revert flakeid_events:events from pg: the table, then the extension.
BEGIN;

DROP TABLE events;
DROP EXTENSION flakeid;

COMMIT;
