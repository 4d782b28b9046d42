"""Primary key fields that the database fills in with nextflake(): Django
leaves them out of the INSERT and reads them back from RETURNING, as ints."""

from django.db import models
from django.db.models.query_utils import DeferredAttribute


class IntValue(DeferredAttribute):
    # Django before 4.0 does not convert the key that INSERT ... RETURNING
    # gives back, which psycopg2 hands over as text for a flakeid
    def __set__(self, instance, value):
        instance.__dict__[self.field.attname] = None if value is None else int(value)


class FlakeidField(models.BigAutoField):
    """A flakeid key: left out of INSERT, read back through RETURNING."""

    descriptor_class = IntValue

    def db_type(self, connection):
        return "flakeid"

    def rel_db_type(self, connection):
        return "flakeid"

    def db_type_suffix(self, connection):
        return None  # no identity (Django 4.1 and later)

    def from_db_value(self, value, expression, connection):
        return None if value is None else int(value)


class BigintFlakeidField(FlakeidField):
    """The same over a bigint column."""

    def db_type(self, connection):
        return "bigint"

    def rel_db_type(self, connection):
        return "bigint"
