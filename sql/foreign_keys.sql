-- Foreign keys between flakeid and bigint columns.  A foreign key compares
-- the referencing column with the key through the key's equality, so it
-- needs an implicit cast from the referencing column's type to the key's:
-- bigint -> flakeid is one, flakeid -> bigint is not (it is an assignment
-- cast).  Where keys must mix with bigint keys, the key is a bigint column
-- with DEFAULT nextflake().

-- an application's existing table with bigint keys
CREATE TABLE accounts (id bigserial PRIMARY KEY, name text NOT NULL);
INSERT INTO accounts (name) SELECT 'account ' || g FROM generate_series(1, 3) g;

-- a flakeid column cannot reference a bigint key: SQLSTATE 42804 (the
-- detail's wording differs between server versions, so it is left out)
\set VERBOSITY terse
CREATE TABLE orders (
	id flakeid PRIMARY KEY DEFAULT nextflake(),
	account flakeid REFERENCES accounts
);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
CREATE TABLE orders (id flakeid PRIMARY KEY DEFAULT nextflake(), account flakeid);
ALTER TABLE orders ADD FOREIGN KEY (account) REFERENCES accounts;
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
\set VERBOSITY default
DROP TABLE orders;

-- the other way works: a bigint column references a flakeid key
CREATE TABLE events (id flakeid PRIMARY KEY DEFAULT nextflake(), body text);
CREATE TABLE event_notes (
	id bigserial PRIMARY KEY,
	event bigint NOT NULL REFERENCES events ON DELETE CASCADE,
	note text
);
CREATE INDEX ON event_notes (event);
INSERT INTO events (body) SELECT 'event ' || g FROM generate_series(1, 10) g;
INSERT INTO event_notes (event, note)
SELECT id, 'note ' || g FROM events, generate_series(1, 100) g;
SELECT count(*) AS notes, count(DISTINCT e.id) AS events
FROM event_notes n JOIN events e ON e.id = n.event;
-- a key that no event has: SQLSTATE 23503
INSERT INTO event_notes (event) VALUES (12345);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
-- a key that no flakeid can be fails the check's cast: SQLSTATE 22003
\set SHOW_CONTEXT never
INSERT INTO event_notes (event) VALUES (-1);
\set SHOW_CONTEXT errors
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;

-- But deleting an event looks for its notes with event::flakeid = $1,
-- which the index on event cannot serve: the whole table is read for each
-- event.  The statistics count the scans (a backend's counts reach them
-- after the statement that asks for a flush).
CREATE FUNCTION seq_scans(rel regclass) RETURNS bigint
LANGUAGE sql AS $$ SELECT seq_scan FROM pg_stat_user_tables WHERE relid = rel $$;
ANALYZE event_notes;
SELECT pg_stat_force_next_flush() \gset
SELECT seq_scans('event_notes') AS before \gset
DELETE FROM events WHERE id IN (SELECT id FROM events ORDER BY id LIMIT 3);
SELECT pg_stat_force_next_flush() \gset
SELECT seq_scans('event_notes') - :before >= 3 AS a_scan_per_deleted_event,
	(SELECT count(*) FROM event_notes) AS notes_left;

-- The recipe: a bigint key with DEFAULT nextflake(), referenced by and
-- referencing bigint tables, its old keys (from a bigserial, say) beside
-- the new ones.
CREATE TABLE orders (
	id bigint PRIMARY KEY DEFAULT nextflake(),
	account bigint NOT NULL REFERENCES accounts,
	n integer
);
CREATE TABLE order_lines (
	id bigserial PRIMARY KEY,
	order_id bigint NOT NULL REFERENCES orders ON DELETE CASCADE,
	line text
);
CREATE INDEX ON order_lines (order_id);
INSERT INTO orders (id, account) VALUES (1, 1), (2, 2);
INSERT INTO orders (account, n) SELECT 1 + g % 3, g FROM generate_series(1, 1000) g;
INSERT INTO order_lines (order_id, line) SELECT id, 'line ' || g FROM orders, generate_series(1, 2) g;

-- new keys: unique, ascending in the order of the rows, above the old ones
SELECT count(*) AS new_keys, count(DISTINCT id) AS distinct_keys,
	min(id) > 2 AS above_old_keys, bool_and(id > prev) AS ascending
FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM orders WHERE n IS NOT NULL) s;
-- decoded on the bigint column, as its bits say
SELECT bool_and(flakeid_node(id) = 42) AS node_42,
	bool_and(flakeid_node(id) = (id >> 12) & 1023) AS node_bits,
	bool_and(flakeid_sequence(id) = id & 4095) AS sequence_bits,
	bool_and(flakeid_timestamp(id) =
		timestamptz '2020-01-01 00:00:00+00' + (id >> 22) * interval '1 ms') AS timestamp_bits,
	bool_and(flakeid_timestamp(id) BETWEEN now() - interval '1 minute'
		AND clock_timestamp() + current_setting('flakeid.max_lead')::interval) AS made_now
FROM orders WHERE n IS NOT NULL;
-- an old key decodes too, to the epoch's first millisecond
SELECT flakeid_node(id), flakeid_sequence(id), flakeid_timestamp(id) FROM orders WHERE id = 2;
-- both foreign keys hold
INSERT INTO orders (account) VALUES (4);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
INSERT INTO order_lines (order_id) VALUES (3);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT count(*) AS lines, count(DISTINCT o.id) AS orders, count(DISTINCT a.id) AS accounts
FROM order_lines l JOIN orders o ON o.id = l.order_id JOIN accounts a ON a.id = o.account;
-- and deleting orders finds their lines through the index
ANALYZE order_lines;
SELECT pg_stat_force_next_flush() \gset
SELECT seq_scans('order_lines') AS before \gset
DELETE FROM orders WHERE id IN (1, (SELECT max(id) FROM orders));
SELECT pg_stat_force_next_flush() \gset
SELECT seq_scans('order_lines') - :before AS table_scans,
	(SELECT count(*) FROM order_lines) AS lines_left;

DROP TABLE order_lines, orders, event_notes, events, accounts;
DROP FUNCTION seq_scans(regclass);
