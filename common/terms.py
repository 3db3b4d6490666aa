"""What an application is promised or estimated at, as one typed value the whole system carries.

``AppTerms`` travels once from the protocols (a submission's deadline, an AM's signals) through the service
layer, the ledger, the snapshot policies read (``AppView.terms``) and the state store: a deadline bought at
admission (MRM), the capacity a job's AM asks to be guaranteed (Jockey), and the job's size estimate with its
source (SLearn and the estimators it is compared with). ``AmSignals`` is what an ApplicationMaster policy tells
the RM besides its asks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from common.resources import Resources

SizeSource = Literal["declared", "las", "point", "history", "slearn", "oracle"]
SIZE_SOURCES: Final[tuple[SizeSource, ...]] = ("declared", "las", "point", "history", "slearn", "oracle")
"""Size sources, weakest first: a later one replaces an earlier one, never the other way round (the RM's own
measurement beats what an AM declares; the simulator's exact sizes beat every estimate)."""


@dataclass(frozen=True, slots=True)
class SizeEstimate:
    """A job's size: its remaining work in task-seconds, where the number comes from, how sure it is."""

    remaining_s: float
    source: SizeSource = "declared"
    total_s: float | None = None
    confidence: float = 0.0  # 0 (a guess) .. 1 (exact)

    def __post_init__(self) -> None:
        if not self.remaining_s >= 0:
            raise ValueError(f"a size estimate's remaining work must be >= 0 seconds, got {self.remaining_s!r}")
        if self.source not in SIZE_SOURCES:
            raise ValueError(f"unknown size source {self.source!r}; known: {', '.join(SIZE_SOURCES)}")
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"a confidence is within [0, 1], got {self.confidence!r}")

    def outranks(self, other: SizeEstimate | None) -> bool:
        """Whether this estimate may replace ``other`` (same or stronger source)."""
        return other is None or SIZE_SOURCES.index(self.source) >= SIZE_SOURCES.index(other.source)


@dataclass(frozen=True, slots=True)
class DeadlineClaim:
    """What an admitted deadline holds (MRM): the work it was admitted with, per phase ``(unit-seconds, width
    in units, shortest duration in seconds)``, its price, and the estimate behind it."""

    phases: tuple[tuple[float, float, float], ...]
    price: float
    mean: float  # the estimate of its work, unit-seconds
    std: float
    upper: float  # the prediction interval's upper bound: what the claim holds
    z: float
    method: str  # the estimator: bin, ridge, declared
    runs: int  # of history behind the estimate
    earliest: float  # the earliest feasible finish when it was admitted
    quote_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"phases": [list(p) for p in self.phases], "price": self.price, "mean": self.mean, "std": self.std,
                "upper": self.upper, "z": self.z, "method": self.method, "runs": self.runs,
                "earliest": self.earliest, "quote_id": self.quote_id}

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> DeadlineClaim:
        return DeadlineClaim(
            phases=tuple((float(a), float(b), float(c)) for a, b, c in d["phases"]), price=float(d["price"]),
            mean=float(d["mean"]), std=float(d["std"]), upper=float(d["upper"]), z=float(d["z"]),
            method=str(d["method"]), runs=int(d["runs"]), earliest=float(d["earliest"]),
            quote_id=str(d.get("quote_id", "")))


@dataclass(frozen=True, slots=True)
class AppTerms:
    deadline: float | None = None  # finish by then, seconds since the epoch
    guarantee: Resources | None = None  # the capacity its AM asks to be guaranteed now
    size: SizeEstimate | None = None
    # at submission: buy this quote / the earliest deadline at most this price; once admitted: the claim
    quote_id: str | None = None
    max_price: float | None = None
    claim: DeadlineClaim | None = None

    def with_size(self, size: SizeEstimate | None) -> AppTerms:
        return replace(self, size=size)

    def with_guarantee(self, guarantee: Resources | None) -> AppTerms:
        return replace(self, guarantee=guarantee)

    @property
    def wants_deadline(self) -> bool:
        """The submission asks for a deadline: a time, a quote to buy, or a price to buy the earliest at."""
        return self.deadline is not None or self.quote_id is not None or self.max_price is not None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form the store keeps (empty for no terms)."""
        out: dict[str, Any] = {}
        if self.deadline is not None:
            out["deadline"] = self.deadline
        if self.guarantee is not None:
            out["guarantee"] = self.guarantee.to_dict()
        if self.quote_id is not None:
            out["quote_id"] = self.quote_id
        if self.max_price is not None:
            out["max_price"] = self.max_price
        if self.claim is not None:
            out["claim"] = self.claim.to_dict()
        if self.size is not None:
            out["size"] = {"remaining_s": self.size.remaining_s, "source": self.size.source,
                           "total_s": self.size.total_s, "confidence": self.size.confidence}
        return out

    @staticmethod
    def from_dict(data: Mapping[str, Any] | None) -> AppTerms:
        if not data:
            return NO_TERMS
        size = data.get("size")
        guarantee = data.get("guarantee")
        return AppTerms(
            deadline=float(data["deadline"]) if data.get("deadline") is not None else None,
            guarantee=Resources({str(k): int(v) for k, v in guarantee.items()}) if guarantee else None,
            size=SizeEstimate(remaining_s=float(size["remaining_s"]), source=size.get("source", "declared"),
                              total_s=size.get("total_s"), confidence=float(size.get("confidence", 0.0)))
            if size else None,
            quote_id=str(data["quote_id"]) if data.get("quote_id") is not None else None,
            max_price=float(data["max_price"]) if data.get("max_price") is not None else None,
            claim=DeadlineClaim.from_dict(data["claim"]) if data.get("claim") else None,
        )


NO_TERMS: Final = AppTerms()


@dataclass(frozen=True, slots=True)
class ControlStep:
    """One decision of an AM's control loop (Jockey), its times relative to the call that reports it: taken
    ``age_s`` before it, predicted to finish ``finish_in_s`` after it."""

    age_s: float
    progress: float
    raw_units: int  # A^r
    smoothed_units: float  # A^s
    requested_units: int
    finish_in_s: float
    status: str  # ON_TRACK | AT_RISK
    held: bool = False
    pace: float = 1.0  # the run's observed pace the predictions were scaled by (> 1: slower than its profile)

    def finite(self) -> bool:
        """Every number is finite (a step that is not is refused where it comes in)."""
        return all(math.isfinite(x)
                   for x in (self.age_s, self.progress, self.smoothed_units, self.finish_in_s, self.pace))

    def to_dict(self, heard: float) -> dict[str, Any]:
        """The JSON form the store keeps, with ``heard``, the time the RM heard the step."""
        return {"heard": heard, "age_s": self.age_s, "progress": self.progress, "raw_units": self.raw_units,
                "smoothed_units": self.smoothed_units, "requested_units": self.requested_units,
                "finish_in_s": self.finish_in_s, "status": self.status, "held": self.held, "pace": self.pace}

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> tuple[float, ControlStep]:
        """The time the RM heard the step, and the step (``to_dict``'s inverse)."""
        return float(d["heard"]), ControlStep(
            age_s=float(d["age_s"]), progress=float(d["progress"]), raw_units=int(d["raw_units"]),
            smoothed_units=float(d["smoothed_units"]), requested_units=int(d["requested_units"]),
            finish_in_s=float(d["finish_in_s"]), status=str(d["status"]), held=bool(d.get("held", False)),
            pace=float(d.get("pace", 1.0)))


@dataclass(frozen=True, slots=True)
class AmSignals:
    """What an AM policy tells the RM besides its asks: its job's size as it sees it, the capacity it asks to
    be guaranteed (None: nothing to say), its control decisions since its last call, and, once, how long its
    model of the job took to build (Jockey's C(p, a) precompute)."""

    size: SizeEstimate | None = None
    guarantee: Resources | None = None
    control: tuple[ControlStep, ...] = ()
    model_build_s: float | None = None  # how long the AM took to build its model of the job (sent once)


NO_SIGNALS: Final = AmSignals()
