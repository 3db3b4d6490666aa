"""Run history for SLO inference (Morpheus §4): applications' declared inputs and outputs, one row per ended
application (its run), dataset reads and writes, and users' decisions on SLO proposals.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("apps") as batch:
        batch.add_column(sa.Column("inputs", sa.Text(), nullable=False, server_default="[]"))
        batch.add_column(sa.Column("outputs", sa.Text(), nullable=False, server_default="[]"))
    op.create_table(
        "job_runs",
        sa.Column("app_id", sa.String(128), nullable=False),
        sa.Column("job", sa.Text(), nullable=False),
        sa.Column("queue", sa.Text(), nullable=False),
        sa.Column("user", sa.Text(), nullable=False),
        sa.Column("submit_time", sa.Double(), nullable=False),
        sa.Column("start_time", sa.Double(), nullable=False),
        sa.Column("finish_time", sa.Double(), nullable=False),
        sa.Column("succeeded", sa.Boolean(), nullable=False),
        sa.Column("skyline", sa.Text(), nullable=False),
        sa.Column("unit", sa.Text(), nullable=False),
        sa.Column("step_s", sa.Integer(), nullable=False),
        sa.Column("inputs", sa.Text(), nullable=False),
        sa.Column("outputs", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("app_id", name=op.f("pk_job_runs")),
    )
    op.create_index("ix_job_runs_job", "job_runs", ["job"])
    op.create_table(
        "dataset_accesses",
        sa.Column("access_id", sa.Text(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("time", sa.Double(), nullable=False),
        sa.Column("app_id", sa.String(128), nullable=False),
        sa.PrimaryKeyConstraint("access_id", name=op.f("pk_dataset_accesses")),
    )
    op.create_index("ix_dataset_accesses_path", "dataset_accesses", ["path"])
    op.create_table(
        "slo_decisions",
        sa.Column("job", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reservation_id", sa.Text(), nullable=False),
        sa.Column("based_on", sa.Text(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("decided_at", sa.Double(), nullable=False),
        sa.Column("user", sa.Text(), nullable=False),
        sa.Column("overrides", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("job", name=op.f("pk_slo_decisions")),
    )


def downgrade() -> None:
    op.drop_table("slo_decisions")
    op.drop_index("ix_dataset_accesses_path", table_name="dataset_accesses")
    op.drop_table("dataset_accesses")
    op.drop_index("ix_job_runs_job", table_name="job_runs")
    op.drop_table("job_runs")
    with op.batch_alter_table("apps") as batch:
        batch.drop_column("outputs")
        batch.drop_column("inputs")
