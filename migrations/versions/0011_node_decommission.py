"""Nodes remember when a graceful decommission ends (YARN's decommissioning timeout), so that a restarted RM
keeps a DECOMMISSIONING node out of scheduling and finishes it on time.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.add_column(sa.Column("decommission_deadline", sa.Double(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.drop_column("decommission_deadline")
