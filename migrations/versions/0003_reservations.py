"""Reservations (YARN's reservation system with Morpheus): the reservations table, and the reservation an
application was submitted into.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "reservations",
        sa.Column("reservation_id", sa.String(128), nullable=False),
        sa.Column("queue", sa.Text(), nullable=False),
        sa.Column("user", sa.Text(), nullable=False),
        sa.Column("definition", sa.Text(), nullable=False),
        sa.Column("acceptance_ms", sa.BigInteger(), nullable=False),
        sa.Column("bookings", sa.Text(), nullable=False),
        sa.Column("apps", sa.Text(), nullable=False),
        sa.Column("period", sa.BigInteger(), nullable=False),
        sa.Column("per_instance", sa.Boolean(), nullable=False),
        sa.Column("next_instance", sa.BigInteger(), nullable=False),
        sa.Column("missed", sa.Text(), nullable=False),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("reservation_id", name=op.f("pk_reservations")),
    )
    with op.batch_alter_table("apps") as batch:
        batch.add_column(sa.Column("reservation_id", sa.Text(), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("apps") as batch:
        batch.drop_column("reservation_id")
    op.drop_table("reservations")
