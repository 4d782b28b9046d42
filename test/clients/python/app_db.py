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
