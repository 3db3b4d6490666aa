"""Finished applications' measured work per phase, with the features they were estimated from (deadline
estimators, MRM).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "work_runs",
        sa.Column("app_id", sa.String(128), primary_key=True),
        sa.Column("job", sa.Text(), nullable=False),
        sa.Column("finish_time", sa.Double(), nullable=False),
        sa.Column("features", sa.Text(), nullable=False),
        sa.Column("work", sa.Text(), nullable=False),
        sa.Column("longest", sa.Text(), nullable=False),
    )
    op.create_index("ix_work_runs_job", "work_runs", ["job"])
    op.create_index("ix_work_runs_finish_time", "work_runs", ["finish_time"])


def downgrade() -> None:
    op.drop_index("ix_work_runs_finish_time", "work_runs")
    op.drop_index("ix_work_runs_job", "work_runs")
    op.drop_table("work_runs")
