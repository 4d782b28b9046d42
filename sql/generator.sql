-- nextflake() and nextflakes(): properties of generated IDs, never values.

-- the server under test runs with flakeid.node_id = 42
SHOW flakeid.node_id;

-- a burst from one session: strictly increasing, unique, this node,
-- timestamps near the clock
CREATE TEMP TABLE burst AS
SELECT g, nextflake() AS id, clock_timestamp() AS t FROM generate_series(1, 20000) g;
SELECT count(*) = count(DISTINCT id) AS unique_ids,
	bool_and(id > prev) AS strictly_increasing
FROM (SELECT id, lag(id) OVER (ORDER BY g) AS prev FROM burst) s
WHERE prev IS NOT NULL;
SELECT bool_and(flakeid_node(id) = 42) AS node_42,
	bool_and(flakeid_sequence(id) BETWEEN 0 AND 4095) AS sequence_in_range,
	bool_and(flakeid_timestamp(id) <= t + current_setting('flakeid.max_lead')::interval)
		AS within_lead_bound,
	bool_and(flakeid_timestamp(id) > t - interval '1 second') AS not_in_the_past
FROM burst;
-- 20000 IDs need at least 5 milliseconds of 4096
SELECT count(DISTINCT flakeid_timestamp(id)) >= 5 AS spans_milliseconds FROM burst;
-- one session alone skips no sequence number within a millisecond, but
-- for a tick its reservation drops when a lease renewal lands during it
SELECT count(*) FILTER (WHERE flakeid_sequence(id) = flakeid_sequence(prev) + 1)
	> 0.9 * count(*) AS consecutive_within_ms
FROM (SELECT id, lag(id) OVER (ORDER BY g) AS prev FROM burst) s
WHERE flakeid_timestamp(id) = flakeid_timestamp(prev);

-- nextflakes(n): n ascending IDs, all above what came before
CREATE TEMP TABLE batch AS
SELECT row_number() OVER () AS i, id FROM nextflakes(10000) AS id;
SELECT count(*) AS n, count(DISTINCT id) AS distinct_ids,
	min(id) > (SELECT max(id) FROM burst) AS above_earlier_ids
FROM batch;
SELECT bool_and(id > prev) AS ascending
FROM (SELECT id, lag(id) OVER (ORDER BY i) AS prev FROM batch) s
WHERE prev IS NOT NULL;
-- consecutive within the batch: each step is the next sequence number, or
-- sequence 0 of a later millisecond after the last sequence number
SELECT bool_and(
	(flakeid_timestamp(id) = flakeid_timestamp(prev)
		AND flakeid_sequence(id) = flakeid_sequence(prev) + 1)
	OR (flakeid_timestamp(id) > flakeid_timestamp(prev)
		AND flakeid_sequence(id) = 0 AND flakeid_sequence(prev) = 4095)) AS consecutive
FROM (SELECT id, lag(id) OVER (ORDER BY i) AS prev FROM batch) s
WHERE prev IS NOT NULL;
SELECT nextflake() > (SELECT max(id) FROM batch) AS after_batch;
-- a batch and the single IDs right after it never overlap, even within
-- one millisecond
CREATE TEMP TABLE mixed (id flakeid);
DO $$
BEGIN
	FOR i IN 1..200 LOOP
		INSERT INTO mixed SELECT nextflakes(3);
		INSERT INTO mixed SELECT nextflake();
	END LOOP;
END $$;
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids FROM mixed;
-- a call per row: nextflakes() in the select list, or in FROM with an
-- argument that refers to the row (LATERAL), is called again for each row
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids
FROM (SELECT nextflakes(2) AS id FROM generate_series(1, 3) g) s;
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids
FROM generate_series(1, 3) g CROSS JOIN LATERAL nextflakes(2 + 0 * g) AS id;
-- in FROM with an argument that does not refer to the row, it is called
-- once and its rows are read again for every row: the same IDs repeat
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids
FROM generate_series(1, 3) g CROSS JOIN LATERAL nextflakes(2) AS id;
SELECT count(*) FROM nextflakes(0);
-- one ID: above the one before it, of this node
CREATE TEMP TABLE one_before AS SELECT nextflake() AS id;
SELECT count(*) AS ids, bool_and(x > (SELECT id FROM one_before)) AS above,
	bool_and(flakeid_node(x) = current_setting('flakeid.node_id')::int) AS this_node
FROM nextflakes(1) AS x;
SELECT * FROM nextflakes(-1);
SELECT * FROM nextflakes(NULL);

-- one call that cannot fit within flakeid.max_lead is refused, not stalled
SELECT count(*) FROM nextflakes(2147483647);

-- flakeid.max_batch bounds one call of a role without superuser, which
-- takes from the server's capacity at once; superusers are not bound
SHOW flakeid.max_batch;
CREATE ROLE regress_flake_user;
SET ROLE regress_flake_user;
SELECT count(*) FROM nextflakes(1000000);
SELECT count(*) FROM nextflakes(1000001);
SET flakeid.max_batch = 2000000;
RESET ROLE;
SET flakeid.max_batch = 10;
SELECT count(*) FROM nextflakes(11);
SET ROLE regress_flake_user;
SELECT count(*) FROM nextflakes(11);
SELECT count(*) FROM nextflakes(10);
RESET ROLE;
RESET flakeid.max_batch;

-- flakeid_status() is for monitoring roles, not every role
SET ROLE regress_flake_user;
SELECT state FROM flakeid_status();
SELECT count(*) FROM flakeid_state_file();
RESET ROLE;
GRANT pg_monitor TO regress_flake_user;
SET ROLE regress_flake_user;
SELECT state FROM flakeid_status();
SELECT count(*) = 2 AS two_copies FROM flakeid_state_file() WHERE valid;
RESET ROLE;
DROP ROLE regress_flake_user;

-- flakeid_status() reports this generator
SELECT state, node_id, node_bits, epoch = '2020-01-01 00:00:00+00' AS default_epoch,
	last_id >= (SELECT max(id) FROM batch) AS last_id_is_recent,
	issued >= 30000 AS counts_issued,
	lease_end > last_time AS lease_covers_last_id,
	lead_ms * interval '1 ms' <= current_setting('flakeid.max_lead')::interval AS lead_within_bound
FROM flakeid_status();

-- as a column default, in flakeid and bigint columns
CREATE TABLE events (id flakeid PRIMARY KEY DEFAULT nextflake(), body text);
CREATE TABLE legacy (id bigint PRIMARY KEY DEFAULT nextflake(), body text);
INSERT INTO events (body) SELECT 'e' || g FROM generate_series(1, 1000) g;
INSERT INTO legacy (body) SELECT 'l' || g FROM generate_series(1, 1000) g;
SELECT count(*), count(DISTINCT id), bool_and(flakeid_node(id) = 42) FROM events;
SELECT count(*), count(DISTINCT id), bool_and(flakeid_node(id) = 42) FROM legacy;
-- IDs follow insertion order
SELECT bool_and(id > prev) AS insertion_order
FROM (SELECT id, lag(id) OVER (ORDER BY substr(body, 2)::int) AS prev FROM events) s
WHERE prev IS NOT NULL;
DROP TABLE events, legacy;

-- no session can choose its own node id or layout
SET flakeid.node_id = 7;
SELECT set_config('flakeid.node_id', '7', false);
SET flakeid.node_bits = 16;
SET flakeid.epoch = '2024-01-01';
ALTER ROLE CURRENT_USER SET flakeid.node_id = 7;
ALTER DATABASE regression SET flakeid.node_id = 7;
CREATE FUNCTION other_node() RETURNS flakeid
	LANGUAGE sql SET flakeid.node_id = 7 AS 'SELECT nextflake()';
SET flakeid.no_such_setting = 1;

-- the catalog says what the contract says
SELECT proname, provolatile, proparallel, proisstrict
FROM pg_proc
WHERE proname IN ('nextflake', 'nextflakes', 'flakeid_timestamp', 'flakeid_node',
	'flakeid_sequence', 'flakeid_decode', 'flakeid_from_timestamp')
ORDER BY proname;

-- a batch too large for flakeid.max_lead, as a new session's first call,
-- before it has learnt the layout: one ID more than 5000 ms hold at 4096
-- a millisecond
\c
SELECT count(*) FROM nextflakes(20480001);
