"""The store lease names where its holder serves (gRPC, REST, Hadoop IPC), so that a standby ResourceManager
can redirect clients to the active one.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("store_lease") as batch:
        batch.add_column(sa.Column("endpoints", sa.Text(), nullable=False, server_default="{}"))


def downgrade() -> None:
    with op.batch_alter_table("store_lease") as batch:
        batch.drop_column("endpoints")
