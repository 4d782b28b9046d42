"""Where the ORM and migration tests connect: as the application's role
(FLAKE_APP_USER, no superuser) to a database it owns, on the server that
PGHOST and PGPORT name (test/clients/run makes both)."""

import os

import sqlalchemy as sa

APP_USER = os.environ["FLAKE_APP_USER"]
SERVER_NODE_ID = 42  # test/flakeid.conf


def url(database):
    """The SQLAlchemy URL of one of the application's databases."""
    return sa.engine.URL.create(
        "postgresql+psycopg2",
        username=APP_USER,
        database=database,
        query={"host": os.environ["PGHOST"], "port": os.environ["PGPORT"]},
    )


# Whether the connected role is a superuser: the tests run as one that is not.
IS_SUPERUSER_SQL = "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"


def id_columns_sql(relname_condition):
    """Each table's name, id column type and id default, for the tables
    whose relname meets the condition (an SQL fragment), by name."""
    return (
        "SELECT c.relname, format_type(a.atttypid, a.atttypmod),"
        " pg_get_expr(d.adbin, d.adrelid)"
        " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
        " JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
        f" WHERE a.attname = 'id' AND c.relname {relname_condition} ORDER BY 1"
    )
