"""The extension, the two tables and their DEFAULT nextflake():
makemigrations wrote the CreateModel operations; the extension before
them and the defaults after them are added by hand."""

from django.contrib.postgres.operations import CreateExtension
from django.db import migrations, models

import flakeid_django.fields


class Migration(migrations.Migration):
    initial = True
    dependencies = []

    operations = [
        CreateExtension("flakeid"),
        migrations.CreateModel(
            name="Event",
            fields=[
                ("id", flakeid_django.fields.FlakeidField(primary_key=True, serialize=False)),
                ("body", models.TextField()),
            ],
        ),
        migrations.CreateModel(
            name="Order",
            fields=[
                ("id", flakeid_django.fields.BigintFlakeidField(primary_key=True, serialize=False)),
                ("item", models.TextField()),
            ],
        ),
        migrations.RunSQL(
            [
                "ALTER TABLE flakeid_django_event ALTER COLUMN id SET DEFAULT nextflake()",
                "ALTER TABLE flakeid_django_order ALTER COLUMN id SET DEFAULT nextflake()",
            ],
            migrations.RunSQL.noop,
        ),
    ]
