"""An ended app keeps the control decisions its AM reported (Jockey's control trace), so that its SLO report
still shows them after an RM restart. Written once, with the app's final record.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("apps") as batch:
        batch.add_column(sa.Column("control", sa.Text(), nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("apps") as batch:
        batch.drop_column("control")
