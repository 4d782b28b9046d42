"""The flakeid column type for SQLAlchemy: DDL says flakeid, Python sees an
int, and reflection (so Alembic's autogenerate) knows the type."""

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql.base import ischema_names
from sqlalchemy.ext.compiler import compiles


class Flakeid(sa.types.TypeDecorator):
    impl = sa.BigInteger
    cache_ok = True

    def process_result_value(self, value, dialect):
        # psycopg2 hands a flakeid over as its text
        return None if value is None else int(value)


@compiles(Flakeid, "postgresql")
def compile_flakeid(type_, compiler, **kw):
    return "flakeid"


ischema_names["flakeid"] = Flakeid
