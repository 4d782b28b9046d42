"""flakeid through psycopg2: IDs above 2^53 read exactly, as column values
and through to_json(), and IDs passed as parameters are stored and read back
exactly.  The connection comes from PGHOST, PGPORT, PGUSER and PGDATABASE;
the server preloads flakeid."""

import unittest

import psycopg2
import psycopg2.errors

from flakeid_psycopg2 import register_flakeid

ABOVE_2_53 = 2**53 + 1
MAX = 2**63 - 1


def connect():
    conn = psycopg2.connect("")
    conn.autocommit = True
    return conn


class FlakeidClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.conn = connect()
        with cls.conn.cursor() as cur:
            cur.execute("CREATE EXTENSION IF NOT EXISTS flakeid")
            cur.execute(
                "CREATE TEMP TABLE py_events ("
                " id flakeid PRIMARY KEY DEFAULT nextflake(),"
                " legacy bigint DEFAULT nextflake(),"
                " body text)"
            )

    @classmethod
    def tearDownClass(cls):
        cls.conn.close()

    def query(self, sql, params=None, conn=None):
        with (conn or self.conn).cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchall()

    def test_values_read_exactly(self):
        # psycopg2 does not know the type: it hands over the exact text
        (row,) = self.query(
            "SELECT '9007199254740993'::flakeid, '9223372036854775807'::flakeid,"
            " to_json('9007199254740993'::flakeid), to_json('9223372036854775807'::flakeid),"
            " 9007199254740993::flakeid::bigint"
        )
        self.assertEqual(row[0], str(ABOVE_2_53))
        self.assertEqual(row[1], str(MAX))
        self.assertEqual(row[2], str(ABOVE_2_53))
        self.assertEqual(row[3], str(MAX))
        self.assertEqual(row[4], ABOVE_2_53)

    def test_generated_ids_read_exactly(self):
        rows = self.query(
            "INSERT INTO py_events (body) SELECT 'gen' FROM generate_series(1, 100)"
            " RETURNING id, id::text, to_json(id), row_to_json(py_events),"
            " legacy, legacy::text"
        )
        self.assertEqual(len(rows), 100)
        for id_, id_text, json_id, json_row, legacy, legacy_text in rows:
            self.assertEqual(id_, id_text)
            self.assertGreater(int(id_), 2**53)
            self.assertEqual(json_id, id_)
            self.assertEqual(json_row["id"], id_)
            self.assertIsInstance(legacy, int)
            self.assertEqual(str(legacy), legacy_text)
            self.assertEqual(json_row["legacy"], legacy)

    def test_typecaster_gives_ints(self):
        # a connection that registers the type (flakeid_psycopg2.py) reads Python ints
        conn = connect()
        try:
            register_flakeid(conn)
            ((value, array, null),) = self.query(
                "SELECT '9223372036854775807'::flakeid,"
                " ARRAY['9007199254740993', '0']::flakeid[], NULL::flakeid",
                conn=conn,
            )
            self.assertEqual(value, MAX)
            self.assertEqual(array, [ABOVE_2_53, 0])
            self.assertIsNone(null)
        finally:
            conn.close()

    def test_parameters_round_trip(self):
        for param in (ABOVE_2_53, MAX, 2**60 + 7, str(ABOVE_2_53 + 2), "1234567890123456789"):
            with self.subTest(param=param):
                ((id_, legacy),) = self.query(
                    "INSERT INTO py_events (id, legacy, body) VALUES (%s, %s, 'param')"
                    " RETURNING id, legacy",
                    (param, param),
                )
                self.assertEqual(id_, str(param))
                self.assertEqual(legacy, int(param))
                rows = self.query(
                    "SELECT id, to_json(id) FROM py_events WHERE id = %s", (param,)
                )
                self.assertEqual(rows, [(str(param), str(param))])

    def test_compact_forms(self):
        ((base32, back),) = self.query(
            "SELECT flakeid_format(%s, 'base32'),"
            " flakeid_parse(flakeid_format(%s, 'base62'), 'base62')",
            (MAX, MAX),
        )
        self.assertEqual(base32, "7ZZZZZZZZZZZZ")
        self.assertEqual(back, str(MAX))

    def test_bad_parameters_fail(self):
        for param, error in (
            (-1, psycopg2.errors.NumericValueOutOfRange),
            (str(2**63), psycopg2.errors.NumericValueOutOfRange),
            ("12abc", psycopg2.errors.InvalidTextRepresentation),
        ):
            with self.subTest(param=param):
                with self.assertRaises(error):
                    self.query("SELECT CAST(%s AS flakeid)", (param,))


if __name__ == "__main__":
    unittest.main()
