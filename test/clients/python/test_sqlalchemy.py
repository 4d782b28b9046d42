"""flakeid through the SQLAlchemy ORM, as docs/clients.md shows it: the
models of sqlalchemy_models.py, a flakeid key with the Flakeid type of
flakeid_sqlalchemy.py and a bigint key, both with DEFAULT nextflake(),
made by create_all(); Alembic's
autogenerate finds nothing to change.  It connects as the application's
role (no superuser) to its database flakeid_sqlalchemy."""

import datetime
import unittest

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.orm import Session

from app_db import IS_SUPERUSER_SQL, SERVER_NODE_ID, id_columns_sql, url
from sqlalchemy_models import Base, Event, Order


class SqlAlchemyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.engine = sa.create_engine(url("flakeid_sqlalchemy"), future=True)
        # the extension first (in a migration), then the tables
        with cls.engine.begin() as conn:
            conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS flakeid"))
        Base.metadata.create_all(cls.engine)

    @classmethod
    def tearDownClass(cls):
        cls.engine.dispose()

    def query(self, sql):
        with self.engine.begin() as conn:
            return conn.execute(sa.text(sql)).all()

    def test_role_is_not_superuser(self):
        self.assertEqual(
            self.query(IS_SUPERUSER_SQL), [(False,)]
        )

    def test_create_all_made_flakeid_and_bigint_keys(self):
        self.assertEqual(
            self.query(id_columns_sql("IN ('events', 'orders')")),
            [("events", "flakeid", "nextflake()"), ("orders", "bigint", "nextflake()")],
        )

    def check_model(self, model, field):
        with Session(self.engine) as session:
            rows = [model(**{field: f"row {n}"}) for n in range(3)]
            session.add_all(rows)
            session.commit()
            ids = [row.id for row in rows]
        for id_ in ids:
            self.assertIsInstance(id_, int)
            self.assertGreater(id_, 2**53)
        self.assertEqual(ids, sorted(set(ids)))

        with Session(self.engine) as session:
            for id_ in ids:
                self.assertEqual(session.get(model, id_).id, id_)
                found = session.execute(sa.select(model).where(model.id == str(id_))).scalar_one()
                self.assertEqual(found.id, id_)
            ((node, ts),) = session.execute(
                sa.select(sa.func.flakeid_node(model.id), sa.func.flakeid_timestamp(model.id))
                .where(model.id == ids[0])
            ).all()
        self.assertEqual(node, SERVER_NODE_ID)
        now = datetime.datetime.now(datetime.timezone.utc)
        self.assertLess(abs(ts - now), datetime.timedelta(minutes=1))

    def test_flakeid_key(self):
        self.check_model(Event, "body")

    def test_bigint_key(self):
        self.check_model(Order, "item")

    def test_bigint_type_over_a_flakeid_column_reads_text(self):
        # why Flakeid: psycopg2 returns a flakeid as its text
        with Session(self.engine) as session:
            session.add(Event(body="as text"))
            session.commit()
        plain = sa.Table("events", sa.MetaData(), sa.Column("id", sa.BigInteger, primary_key=True))
        with self.engine.connect() as conn:
            value = conn.execute(sa.select(plain.c.id).limit(1)).scalar_one()
        self.assertIsInstance(value, str)

    def test_autogenerate_finds_nothing_to_change(self):
        with self.engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            self.assertEqual(compare_metadata(context, Base.metadata), [])

    def test_same_index_size(self):
        # both keys are 8-byte btree entries
        with self.engine.begin() as conn:
            conn.execute(sa.text("TRUNCATE events, orders"))
            conn.execute(sa.text("INSERT INTO events (body) SELECT 'x' FROM generate_series(1, 10000)"))
            conn.execute(sa.text("INSERT INTO orders (item) SELECT 'x' FROM generate_series(1, 10000)"))
        self.assertEqual(
            self.query(
                "SELECT pg_relation_size('events_pkey') = pg_relation_size('orders_pkey'),"
                " pg_relation_size('events_pkey') > 0"
            ),
            [(True, True)],
        )


if __name__ == "__main__":
    unittest.main()
