"""The AM-side extension point: which containers a DAG job asks for, and of which kind.

An ``AskPolicy`` looks at the job's ``DagState`` (task states plus duration estimates that
measured task durations refine), the job's current fair share and the time, and returns one
``AskDecision`` per (stage, ask type) it wants containers for. The AM turns the decisions into its
ask table: an entry it sent before that is missing from the new decisions is withdrawn.

Request ids: DEFAULT asks of stage ``i`` (0-based, in job file order) use
``allocation_request_id = i + 1``; ALTRUISTIC asks of the same stage use ``ALTRUISTIC_BASE + i + 1``
so that a policy may split one stage between both kinds. ``stage_index_of`` maps either back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, runtime_checkable

from am.dag_state import DagState
from common.resources import Resources
from common.terms import NO_SIGNALS, AmSignals, SizeEstimate

if TYPE_CHECKING:
    from am.policies.jockey.profile import JobProfile

AskType = Literal["DEFAULT", "ALTRUISTIC"]
ALTRUISTIC_BASE = 1_000_000
REMAINING_WORK_TOLERANCE = 0.05
"""Resend an otherwise unchanged ask when its remaining-work estimate moved by more than this."""


def request_id(stage_index: int, ask_type: AskType = "DEFAULT") -> int:
    base = ALTRUISTIC_BASE if ask_type == "ALTRUISTIC" else 0
    return base + stage_index + 1


def stage_index_of(allocation_request_id: int) -> int | None:
    """The stage index a request id refers to, or None for ids this scheme never produces."""
    rid = allocation_request_id
    if rid > ALTRUISTIC_BASE:
        rid -= ALTRUISTIC_BASE
    return rid - 1 if rid >= 1 else None


@dataclass(frozen=True, slots=True)
class AskDecision:
    """One ask-table entry: ``num_containers`` is the total still wanted, not a delta."""

    allocation_request_id: int
    stage: str
    priority: int  # lower = more important; the stage's depth, so earlier stages come first
    capability: Resources
    num_containers: int
    ask_type: AskType = "DEFAULT"
    remaining_work_s: float = 0.0  # the job's estimated remaining container-seconds

    def with_count(self, num_containers: int) -> AskDecision:
        return AskDecision(
            self.allocation_request_id, self.stage, self.priority, self.capability, num_containers,
            self.ask_type, self.remaining_work_s,
        )

    def same_ask(self, other: AskDecision) -> bool:
        """Equal apart from a small drift of the remaining-work estimate."""
        if (
            self.allocation_request_id, self.stage, self.priority, self.capability,
            self.num_containers, self.ask_type,
        ) != (
            other.allocation_request_id, other.stage, other.priority, other.capability,
            other.num_containers, other.ask_type,
        ):
            return False
        scale = max(abs(self.remaining_work_s), abs(other.remaining_work_s), 1.0)
        return abs(self.remaining_work_s - other.remaining_work_s) <= REMAINING_WORK_TOLERANCE * scale


class AskPolicy(Protocol):
    """Decides the job's asks from its DAG state, its fair share and the time (pure), and what the AM tells
    the RM besides (``signals``: the job's remaining work as the AM sees it, a guarantee it asks for), as of
    its last ``asks``."""

    name: ClassVar[str]

    def asks(self, dag: DagState, fair_share: Resources, now: float) -> list[AskDecision]: ...

    def signals(self) -> AmSignals: ...


@runtime_checkable
class FollowsDeadline(Protocol):
    """A policy that keeps a deadline and follows the RM's when it changes at run time: ``deadline`` is in
    the clock the policy's ``now`` comes from."""

    def set_deadline(self, deadline: float) -> None: ...


@runtime_checkable
class FollowsGrant(Protocol):
    """A policy that plans with the guarantee the RM grants it (the floor its ``guarantee`` stage serves),
    heard in every allocate answer: ``None`` when the answer carries none (no such stage, or an older RM).
    ``ceiling`` is the most the app's queue lets guarantees hold (None: not told)."""

    def set_granted(self, granted: Resources | None, ceiling: Resources | None = None) -> None: ...


@runtime_checkable
class TakesProfile(Protocol):
    """A policy that models the job from a profile of its earlier runs when the RM has one (handed to it when
    the AM registers, before its first decision), instead of from the job file."""

    def set_profile(self, profile: JobProfile) -> None: ...


def declared(remaining_s: float | None) -> AmSignals:
    """The signals of a policy that reports the remaining work it declares on its asks, and nothing more."""
    return NO_SIGNALS if remaining_s is None else AmSignals(size=SizeEstimate(remaining_s, "declared"))


class AskTable:
    """The asks last sent to the RM, so that each allocate call carries only what changed.

    ``update`` takes a policy's full decision list and returns the entries to send: new or changed
    ones, and withdrawals (``num_containers = 0``) for ids that were outstanding but are no longer
    decided. Like the RM, the table counts an entry down as its containers arrive (``delivered``),
    so it mirrors what the RM still has outstanding. ``entries`` is the whole outstanding table,
    for a resend after a resync.
    """

    def __init__(self) -> None:
        self._sent: dict[int, AskDecision] = {}

    def update(self, decisions: Iterable[AskDecision]) -> list[AskDecision]:
        wanted: dict[int, AskDecision] = {}
        for d in decisions:
            if d.num_containers < 0:
                raise ValueError(f"negative num_containers for request {d.allocation_request_id}")
            if d.allocation_request_id in wanted:
                raise ValueError(f"two decisions for allocation_request_id {d.allocation_request_id}")
            wanted[d.allocation_request_id] = d
        changes: list[AskDecision] = []
        for rid, old in sorted(self._sent.items()):
            if rid not in wanted and old.num_containers > 0:
                changes.append(old.with_count(0))
        for rid, new in sorted(wanted.items()):
            old_entry = self._sent.get(rid)
            if old_entry is None and new.num_containers == 0:
                continue
            if old_entry is None or not old_entry.same_ask(new):
                changes.append(new)
        for change in changes:
            if change.num_containers == 0:
                self._sent.pop(change.allocation_request_id, None)
            else:
                self._sent[change.allocation_request_id] = change
        return changes

    def delivered(self, allocation_request_id: int) -> None:
        """A container for this entry arrived: the RM lowered its count by one, so does the mirror."""
        old = self._sent.get(allocation_request_id)
        if old is None:
            return
        if old.num_containers <= 1:
            del self._sent[allocation_request_id]
        else:
            self._sent[allocation_request_id] = old.with_count(old.num_containers - 1)

    def entries(self) -> list[AskDecision]:
        return [d for _, d in sorted(self._sent.items())]

    def clear(self) -> None:
        self._sent.clear()


def total_asked(decisions: Sequence[AskDecision]) -> int:
    return sum(d.num_containers for d in decisions)
