"""Two SQLAlchemy models whose keys the database makes with nextflake():
events over a flakeid column (the Flakeid type of flakeid_sqlalchemy.py),
orders over a bigint column.  Both keys reach Python as ints."""

import sqlalchemy as sa
from sqlalchemy.orm import declarative_base

from flakeid_sqlalchemy import Flakeid

Base = declarative_base()


class Event(Base):
    __tablename__ = "events"
    id = sa.Column(Flakeid, primary_key=True, server_default=sa.text("nextflake()"))
    body = sa.Column(sa.Text, nullable=False)


class Order(Base):
    __tablename__ = "orders"
    id = sa.Column(sa.BigInteger, primary_key=True, server_default=sa.text("nextflake()"))
    item = sa.Column(sa.Text, nullable=False)
