"""Resource vectors: named, non-negative integer amounts ("memory-mb", "vcores", "gpu", ...)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

MEMORY = "memory-mb"
VCORES = "vcores"
# shepherd's short names of Hadoop's well-known resource types; every other name is the same in both
HADOOP_NAMES = {"gpu": "yarn.io/gpu", "fpga": "yarn.io/fpga"}
SHEPHERD_NAMES = {v: k for k, v in HADOOP_NAMES.items()}


def shepherd_name(hadoop_name: str) -> str:
    """``yarn.io/gpu`` -> ``gpu``; any other name as it is."""
    return SHEPHERD_NAMES.get(hadoop_name, hadoop_name)


def hadoop_name(name: str) -> str:
    """``gpu`` -> ``yarn.io/gpu``; any other name as it is."""
    return HADOOP_NAMES.get(name, name)


@dataclass(frozen=True, slots=True)
class Resources:
    """An immutable resource vector. Missing types count as zero; zero entries are dropped."""

    amounts: Mapping[str, int] = field(default_factory=dict)

    ZERO: ClassVar[Resources]

    def __post_init__(self) -> None:
        clean = {k: int(v) for k, v in self.amounts.items() if int(v) != 0}
        object.__setattr__(self, "amounts", clean)

    def __hash__(self) -> int:
        return hash(frozenset(self.amounts.items()))

    @staticmethod
    def of(memory_mb: int = 0, vcores: int = 0, **others: int) -> Resources:
        amounts = {MEMORY: memory_mb, VCORES: vcores}
        amounts.update({k.replace("_", "-"): v for k, v in others.items()})
        return Resources(amounts)

    @property
    def memory_mb(self) -> int:
        return self.amounts.get(MEMORY, 0)

    @property
    def vcores(self) -> int:
        return self.amounts.get(VCORES, 0)

    def get(self, name: str) -> int:
        return self.amounts.get(name, 0)

    def types(self) -> Iterator[str]:
        return iter(self.amounts)

    def __add__(self, other: Resources) -> Resources:
        out = dict(self.amounts)
        for k, v in other.amounts.items():
            v += out.get(k, 0)
            if v:
                out[k] = v
            else:
                out.pop(k, None)
        return _clean(out)

    def __sub__(self, other: Resources) -> Resources:
        out = dict(self.amounts)
        for k, v in other.amounts.items():
            v = out.get(k, 0) - v
            if v:
                out[k] = v
            else:
                out.pop(k, None)
        return _clean(out)

    def __mul__(self, factor: int) -> Resources:
        if type(factor) is not int:
            return Resources({k: v * factor for k, v in self.amounts.items()})
        return _clean({k: v * factor for k, v in self.amounts.items()} if factor else {})

    def fits_in(self, other: Resources) -> bool:
        """True when every amount here is at most the same amount in ``other``."""
        return all(v <= other.amounts.get(k, 0) for k, v in self.amounts.items())

    def is_zero(self) -> bool:
        return not self.amounts

    def any_negative(self) -> bool:
        return any(v < 0 for v in self.amounts.values())

    def clamp_min_zero(self) -> Resources:
        for v in self.amounts.values():
            if v < 0:
                return _clean({k: v for k, v in self.amounts.items() if v > 0})
        return self

    def shares(self, total: Resources) -> dict[str, float]:
        """Each amount as a fraction of ``total`` (types the total lacks count as infinitely scarce)."""
        out: dict[str, float] = {}
        for k, v in self.amounts.items():
            cap = total.amounts.get(k, 0)
            out[k] = v / cap if cap > 0 else (float("inf") if v > 0 else 0.0)
        return out

    def dominant_share(self, total: Resources) -> float:
        """The largest of ``shares(total)`` (0.0 for a zero vector)."""
        out: float | None = None
        caps = total.amounts
        for k, v in self.amounts.items():
            cap = caps.get(k, 0)
            share = v / cap if cap > 0 else (float("inf") if v > 0 else 0.0)
            if out is None or share > out:
                out = share
        return 0.0 if out is None else out

    def to_dict(self) -> dict[str, int]:
        return dict(self.amounts)

    def __str__(self) -> str:
        parts = [f"{k}={v}" for k, v in sorted(self.amounts.items())]
        return "<" + ", ".join(parts) + ">"


Resources.ZERO = Resources()


def _clean(amounts: dict[str, int]) -> Resources:
    """A vector from amounts already in canonical form (int values, no zeros), skipping the check."""
    out = object.__new__(Resources)
    object.__setattr__(out, "amounts", amounts)
    return out


def total(items: Iterable[Resources]) -> Resources:
    out: dict[str, int] = {}
    for r in items:
        for k, v in r.amounts.items():
            out[k] = out.get(k, 0) + v
    return Resources(out)


def component_max(a: Resources, b: Resources) -> Resources:
    keys = set(a.amounts) | set(b.amounts)
    return Resources({k: max(a.get(k), b.get(k)) for k in keys})


def component_min(a: Resources, b: Resources) -> Resources:
    return Resources({k: min(v, b.get(k)) for k, v in a.amounts.items()})


def whole_units(room: Resources, unit: Resources) -> int:
    """How many whole ``unit``s fit in ``room``, by every type the unit uses (0 for a unit that uses none)."""
    fits = [room.get(r) // v for r, v in unit.amounts.items() if v > 0]
    return max(0, min(fits)) if fits else 0
