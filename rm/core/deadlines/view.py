"""What one scheduling cycle sees of the admitted deadlines: per app, its deadline and what its claim in the
deadline book is owed now. Kept free of the scheduling model so ``rm.core.model.ClusterSnapshot`` carries it.
"""

from __future__ import annotations

from dataclasses import dataclass

from common.ids import AppId, QueuePath
from common.resources import Resources


@dataclass(frozen=True, slots=True)
class DeadlineEntry:
    app_id: AppId
    queue: QueuePath
    deadline: float  # seconds since the epoch
    owed: float  # units the claim's lazy layout gives the app at this step
    unit: Resources  # one unit: the queue's minimum allocation
    status: str = "ON_TRACK"


@dataclass(frozen=True, slots=True)
class DeadlineView:
    """Admitted deadline apps in EDF order (earliest deadline first, then app id)."""

    entries: tuple[DeadlineEntry, ...] = ()
    next_change: float | None = None  # when some claim's due changes next (a step boundary)

    def of(self, app_id: AppId) -> DeadlineEntry | None:
        for e in self.entries:
            if e.app_id == app_id:
                return e
        return None


NO_DEADLINES = DeadlineView()


def units_of(r: Resources, unit: Resources) -> float:
    """``r`` in units: the largest multiple of the unit any of its resource types needs."""
    out = 0.0
    for t, v in r.amounts.items():
        u = unit.get(t)
        if u > 0:
            out = max(out, v / u)
    return out


def units_done(resource: Resources, seconds: float, unit: Resources) -> float:
    """The deadline units a container of ``resource`` did in ``seconds``."""
    return units_of(resource, unit) * max(0.0, seconds)
