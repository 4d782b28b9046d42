-- Deploy flakeid_events:events to pg: the flakeid extension and a table
-- whose key it fills in.
BEGIN;

CREATE EXTENSION IF NOT EXISTS flakeid;
CREATE TABLE events (
    id flakeid PRIMARY KEY DEFAULT nextflake(),
    body text NOT NULL
);

COMMIT;
