"""flakeid in Alembic migrations, as docs/clients.md shows it:
Alembic's command line, run as the application's role (no superuser) that
owns its database flakeid_alembic, upgrades (the extension and a table with
DEFAULT nextflake()), downgrades and upgrades again; rows inserted in
between get IDs of this server that keep increasing."""

import datetime
import os
import subprocess
import sys
import unittest

import sqlalchemy as sa
from app_db import APP_USER, SERVER_NODE_ID, url

DATABASE = "flakeid_alembic"
CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "alembic", "alembic.ini")


def alembic(*args):
    """python3 -m alembic -c alembic/alembic.ini ARGS, with the connection in
    the PG* variables."""
    subprocess.run(
        [sys.executable, "-m", "alembic", "-c", CONFIG, *args],
        env=dict(os.environ, PGUSER=APP_USER, PGDATABASE=DATABASE),
        check=True,
    )


class AlembicTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.engine = sa.create_engine(url(DATABASE))

    @classmethod
    def tearDownClass(cls):
        cls.engine.dispose()

    def query(self, sql, **params):
        with self.engine.begin() as conn:
            return conn.execute(sa.text(sql), params).all()

    def schema(self):
        ((extension, id_type, id_default),) = self.query(
            "SELECT (SELECT extversion FROM pg_extension WHERE extname = 'flakeid'),"
            " (SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
            "   WHERE attrelid = to_regclass('events') AND attname = 'id'),"
            " (SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef"
            "   WHERE adrelid = to_regclass('events') AND adnum = 1)"
        )
        return extension, id_type, id_default

    def insert_and_decode(self):
        rows = self.query(
            "INSERT INTO events (body) VALUES ('one'), ('two'), ('three')"
            " RETURNING id::bigint, flakeid_node(id), flakeid_timestamp(id)"
        )
        now = datetime.datetime.now(datetime.timezone.utc)
        ids = [row[0] for row in rows]
        for id_, node, ts in rows:
            self.assertGreater(id_, 2**53)
            self.assertEqual(node, SERVER_NODE_ID)
            self.assertLess(abs(ts - now), datetime.timedelta(minutes=1))
        self.assertEqual(ids, sorted(set(ids)))
        self.assertEqual(self.query("SELECT body FROM events WHERE id = :id", id=ids[1]), [("two",)])
        return ids

    def test_role_owns_database_and_is_not_superuser(self):
        self.assertEqual(
            self.query(
                "SELECT r.rolsuper, pg_get_userbyid(d.datdba) = current_user"
                " FROM pg_roles r, pg_database d"
                " WHERE r.rolname = current_user AND d.datname = current_database()"
            ),
            [(False, True)],
        )

    def test_upgrade_downgrade_upgrade(self):
        alembic("upgrade", "head")
        extension, id_type, id_default = self.schema()
        self.assertIsNotNone(extension)
        self.assertEqual((id_type, id_default), ("flakeid", "nextflake()"))
        before = self.insert_and_decode()
        # the downgrade drops the table first: the extension cannot go
        # while a column uses its type
        with self.assertRaises(sa.exc.InternalError) as raised:
            self.query("DROP EXTENSION flakeid")
        self.assertEqual(raised.exception.orig.pgcode, "2BP01")

        alembic("downgrade", "base")
        self.assertEqual(self.schema(), (None, None, None))
        self.assertEqual(self.query("SELECT count(*) FROM alembic_version"), [(0,)])

        alembic("upgrade", "head")
        self.assertEqual(self.schema(), (extension, id_type, id_default))
        again = self.insert_and_decode()
        self.assertGreater(again[0], before[-1])


if __name__ == "__main__":
    unittest.main()
