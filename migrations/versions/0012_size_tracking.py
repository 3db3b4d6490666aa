"""SLearn's state survives a restart: an app keeps its sampling gate (the ratio it was sampled at, its pilots
and whether the gate is open), and a finished run keeps what the size tracker measured of it (the history
predictor's features and the task runtimes per task group).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("apps") as batch:
        batch.add_column(sa.Column("sizing", sa.Text(), nullable=False, server_default="{}"))
    with op.batch_alter_table("work_runs") as batch:
        batch.add_column(sa.Column("sizes", sa.Text(), nullable=False, server_default="{}"))


def downgrade() -> None:
    with op.batch_alter_table("work_runs") as batch:
        batch.drop_column("sizes")
    with op.batch_alter_table("apps") as batch:
        batch.drop_column("sizing")
