"""Checks every door makes on a reservation before the operation: REST, gRPC and Hadoop IPC import them from
here, so a reservation is refused for the same reasons, in the same words, wherever it comes in."""

from __future__ import annotations

from typing import TYPE_CHECKING

from common.errors import BadRequest
from rm.core.policies.registry import SCHEDULERS
from rm.core.reservation.stage import ReservationStage

if TYPE_CHECKING:
    from rm.service.server import ResourceManager


def require_reservation_stage(rm: ResourceManager) -> None:
    """Refuse a new reservation the RM would accept but never serve: its scheduler has no reservation stage
    (as YARN refuses one while its reservation system is off)."""
    if any(stage.name == ReservationStage.name for stage in rm.pipeline):
        return
    serving = ", ".join(n for n, a in SCHEDULERS.items() if ReservationStage.name in a.pipeline.stages)
    raise BadRequest(f"the scheduler {rm.cfg.scheduler!r} has no reservation stage, so it would never serve a "
                     f"reservation; run the ResourceManager with one that has (shepherd.resourcemanager.scheduler: "
                     f"{serving})")
