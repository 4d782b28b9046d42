"""The flakeid extension and a table whose key it fills in; downgrade
removes both."""

import sqlalchemy as sa
from alembic import op

from flakeid_sqlalchemy import Flakeid

revision = "0001"
down_revision = None


def upgrade():
    op.execute("CREATE EXTENSION IF NOT EXISTS flakeid")
    op.create_table(
        "events",
        sa.Column("id", Flakeid(), primary_key=True, server_default=sa.text("nextflake()")),
        sa.Column("body", sa.Text(), nullable=False),
    )


def downgrade():
    op.drop_table("events")
    op.execute("DROP EXTENSION flakeid")
