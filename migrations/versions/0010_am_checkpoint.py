"""Applications keep their AM's last checkpoint (handed to later attempts) and whether a failed attempt's
containers pass to the next (YARN's keepContainersAcrossApplicationAttempts).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("apps") as batch:
        batch.add_column(sa.Column("keep_containers", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column("am_checkpoint", sa.Text(), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("apps") as batch:
        batch.drop_column("am_checkpoint")
        batch.drop_column("keep_containers")
