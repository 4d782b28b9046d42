"""flakeid through Django's ORM, as docs/clients.md shows it: the
fields of flakeid_django/fields.py over a flakeid and a bigint column, both
with DEFAULT nextflake(), made by the app's migration; makemigrations finds
nothing to change.  It connects as the application's role (no superuser)
to its database flakeid_django."""

import datetime
import os
import unittest

import django
from django.conf import settings

from app_db import APP_USER, IS_SUPERUSER_SQL, SERVER_NODE_ID, id_columns_sql

settings.configure(
    DATABASES={
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": "flakeid_django",
            "USER": APP_USER,
            "HOST": os.environ["PGHOST"],
            "PORT": os.environ["PGPORT"],
        }
    },
    INSTALLED_APPS=["flakeid_django"],
    DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    USE_TZ=True,
)
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.models import DateTimeField, F, Func, IntegerField  # noqa: E402

from flakeid_django.models import Event, Order  # noqa: E402


def decode(queryset):
    return queryset.annotate(
        node=Func(F("id"), function="flakeid_node", output_field=IntegerField()),
        ts=Func(F("id"), function="flakeid_timestamp", output_field=DateTimeField()),
    )


class DjangoTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        call_command("migrate", verbosity=0)

    @classmethod
    def tearDownClass(cls):
        connection.close()

    def query(self, sql):
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchall()

    def test_role_is_not_superuser(self):
        self.assertEqual(
            self.query(IS_SUPERUSER_SQL), [(False,)]
        )

    def test_migration_made_flakeid_and_bigint_keys(self):
        self.assertEqual(
            self.query(id_columns_sql("LIKE 'flakeid_django_%'")),
            [
                ("flakeid_django_event", "flakeid", "nextflake()"),
                ("flakeid_django_order", "bigint", "nextflake()"),
            ],
        )

    def check_model(self, model, field):
        first = model.objects.create(**{field: "one"})
        more = model.objects.bulk_create([model(**{field: "two"}), model(**{field: "three"})])
        ids = [first.id] + [row.id for row in more]
        for id_ in ids:
            self.assertIsInstance(id_, int)
            self.assertGreater(id_, 2**53)
        self.assertEqual(ids, sorted(set(ids)))

        for id_ in ids:
            self.assertEqual(model.objects.get(pk=id_).pk, id_)
            self.assertEqual(model.objects.get(pk=str(id_)).pk, id_)
        self.assertEqual(list(model.objects.filter(pk__in=ids).order_by("pk").values_list("pk", flat=True)), ids)

        row = decode(model.objects.filter(pk=ids[0])).get()
        self.assertEqual(row.node, SERVER_NODE_ID)
        now = datetime.datetime.now(datetime.timezone.utc)
        self.assertLess(abs(row.ts - now), datetime.timedelta(minutes=1))

    def test_flakeid_key(self):
        self.check_model(Event, "body")

    def test_bigint_key(self):
        self.check_model(Order, "item")

    def test_makemigrations_finds_nothing_to_change(self):
        # --check exits with status 1 when the models and migrations differ
        call_command("makemigrations", "flakeid_django", check=True, dry_run=True, verbosity=0)


if __name__ == "__main__":
    unittest.main()
