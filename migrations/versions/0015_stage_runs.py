"""Per-stage reports of ended runs, as their ApplicationMasters send them when they unregister: what a recurring
job's profile (Jockey) is built from and handed to its next run's AM.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "stage_runs",
        sa.Column("app_id", sa.String(128), primary_key=True),
        sa.Column("job", sa.Text(), nullable=False),
        sa.Column("queue", sa.Text(), nullable=False),
        sa.Column("user", sa.Text(), nullable=False),
        sa.Column("finish_time", sa.Double(), nullable=False),
        sa.Column("succeeded", sa.Boolean(), nullable=False),
        sa.Column("stages", sa.Text(), nullable=False),
    )
    op.create_index("ix_stage_runs_job", "stage_runs", ["job"])


def downgrade() -> None:
    op.drop_index("ix_stage_runs_job", table_name="stage_runs")
    op.drop_table("stage_runs")
