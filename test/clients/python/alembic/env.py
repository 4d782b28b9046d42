"""Runs the migrations under versions/ online, each in the transaction
Alembic opens."""

import os
import sys

import sqlalchemy as sa
from alembic import context

# the migrations import the Flakeid type from test/clients/python
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

engine = sa.create_engine(context.config.get_main_option("sqlalchemy.url"))
with engine.connect() as connection:
    context.configure(connection=connection, target_metadata=None)
    with context.begin_transaction():
        context.run_migrations()
engine.dispose()
