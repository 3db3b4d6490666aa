"""A node keeps the hash of its registration's session, so that after an RM restart only its own NodeManager
may register as it while it is not yet LOST; and the container-token keys roll, so the store keeps the keys the
NodeManagers accept (with their ids and times), not one key.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.add_column(sa.Column("session_hash", sa.Text(), nullable=False, server_default=""))
    with op.batch_alter_table("meta") as batch:
        batch.add_column(sa.Column("container_keys", sa.Text(), nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("meta") as batch:
        batch.drop_column("container_keys")
    with op.batch_alter_table("nodes") as batch:
        batch.drop_column("session_hash")
