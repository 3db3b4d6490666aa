"""Applications keep their LIFETIME timeout (YARN's application timeouts).

Revision ID: 0002
Revises: 0001
Create Date: 2025-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("apps") as batch:
        batch.add_column(sa.Column("lifetime_expiry", sa.Double(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("apps") as batch:
        batch.drop_column("lifetime_expiry")
