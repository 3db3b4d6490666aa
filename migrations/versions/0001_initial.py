"""Initial schema: apps, attempts, containers, nodes and the single meta row.

Revision ID: 0001
Revises:
Create Date: 2025-11-21
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "apps",
        sa.Column("app_id", sa.String(128), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("queue", sa.Text(), nullable=False),
        sa.Column("user", sa.Text(), nullable=False),
        sa.Column("app_type", sa.Text(), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("am_resource", sa.Text(), nullable=False),
        sa.Column("am_launch", sa.Text(), nullable=False),
        sa.Column("max_attempts", sa.Integer(), nullable=False),
        sa.Column("tags", sa.Text(), nullable=False),
        sa.Column("unmanaged", sa.Boolean(), nullable=False),
        sa.Column("job_spec_json", sa.Text(), nullable=False),
        sa.Column("submit_time", sa.Double(), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("final_status", sa.String(32), nullable=False),
        sa.Column("diagnostics", sa.Text(), nullable=False),
        sa.Column("tracking_url", sa.Text(), nullable=False),
        sa.Column("progress", sa.Double(), nullable=False),
        sa.Column("start_time", sa.Double(), nullable=False),
        sa.Column("launch_time", sa.Double(), nullable=False),
        sa.Column("finish_time", sa.Double(), nullable=False),
        sa.Column("attempts_started", sa.Integer(), nullable=False),
        sa.Column("failed_attempts", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("app_id", name="pk_apps"),
    )
    op.create_index("ix_apps_state", "apps", ["state"])

    op.create_table(
        "attempts",
        sa.Column("attempt_id", sa.String(128), nullable=False),
        sa.Column("app_id", sa.String(128), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("am_container_id", sa.String(128), nullable=False),
        sa.Column("node_id", sa.Text(), nullable=False),
        sa.Column("start_time", sa.Double(), nullable=False),
        sa.Column("finish_time", sa.Double(), nullable=False),
        sa.Column("diagnostics", sa.Text(), nullable=False),
        sa.Column("counts_as_failure", sa.Boolean(), nullable=False),
        sa.Column("host", sa.Text(), nullable=False),
        sa.Column("rpc_port", sa.Integer(), nullable=False),
        sa.Column("tracking_url", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("attempt_id", name="pk_attempts"),
    )
    op.create_index("ix_attempts_app_id", "attempts", ["app_id"])

    op.create_table(
        "containers",
        sa.Column("container_id", sa.String(128), nullable=False),
        sa.Column("app_id", sa.String(128), nullable=False),
        sa.Column("attempt_id", sa.String(128), nullable=False),
        sa.Column("node_id", sa.Text(), nullable=False),
        sa.Column("resource", sa.Text(), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("allocation_request_id", sa.BigInteger(), nullable=False),
        sa.Column("ask_type", sa.String(32), nullable=False),
        sa.Column("is_am", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("allocate_time", sa.Double(), nullable=False),
        sa.Column("start_time", sa.Double(), nullable=False),
        sa.Column("finish_time", sa.Double(), nullable=False),
        sa.Column("exit_status", sa.Integer(), nullable=False),
        sa.Column("diagnostics", sa.Text(), nullable=False),
        sa.Column("from_leftover", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("container_id", name="pk_containers"),
    )
    op.create_index("ix_containers_app_id", "containers", ["app_id"])

    op.create_table(
        "nodes",
        sa.Column("node_id", sa.Text(), nullable=False),
        sa.Column("http_address", sa.Text(), nullable=False),
        sa.Column("rack", sa.Text(), nullable=False),
        sa.Column("capability", sa.Text(), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("registered_at", sa.Double(), nullable=False),
        sa.Column("last_heartbeat", sa.Double(), nullable=False),
        sa.Column("health_report", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("node_id", name="pk_nodes"),
    )

    op.create_table(
        "meta",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("cluster_timestamp", sa.BigInteger(), nullable=False),
        sa.Column("next_app_seq", sa.BigInteger(), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("amrm_key_hex", sa.Text(), nullable=False),
        sa.Column("container_key_hex", sa.Text(), nullable=False),
        sa.Column("extra", sa.Text(), nullable=False),
        sa.CheckConstraint("id = 1", name=op.f("ck_meta_single_row")),
        sa.PrimaryKeyConstraint("id", name="pk_meta"),
    )


def downgrade() -> None:
    op.drop_table("meta")
    op.drop_table("nodes")
    op.drop_index("ix_containers_app_id", table_name="containers")
    op.drop_table("containers")
    op.drop_index("ix_attempts_app_id", table_name="attempts")
    op.drop_table("attempts")
    op.drop_index("ix_apps_state", table_name="apps")
    op.drop_table("apps")
