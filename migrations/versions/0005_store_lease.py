"""The store lease: one row naming the ResourceManager that may write the store, with an epoch that every write
transaction checks (fencing), so a second RM on the same store cannot write under the first.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-20
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    lease = op.create_table(
        "store_lease",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("owner", sa.Text(), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("acquired_at", sa.Double(), nullable=False),
        sa.Column("renewed_at", sa.Double(), nullable=False),
        sa.Column("expires_at", sa.Double(), nullable=False),
        sa.CheckConstraint("id = 1", name=op.f("ck_store_lease_single_row")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_store_lease")),
    )
    # nobody holds it yet; the first ResourceManager takes it as epoch 1
    op.bulk_insert(lease, [{"id": 1, "owner": "", "epoch": 0, "acquired_at": 0.0, "renewed_at": 0.0,
                            "expires_at": 0.0}])


def downgrade() -> None:
    op.drop_table("store_lease")
