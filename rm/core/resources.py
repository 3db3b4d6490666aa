"""Resource vectors: named, non-negative integer amounts ("memory-mb", "vcores", "gpu", ...)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

MEMORY = "memory-mb"
VCORES = "vcores"


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
            out[k] = out.get(k, 0) + v
        return Resources(out)

    def __sub__(self, other: Resources) -> Resources:
        out = dict(self.amounts)
        for k, v in other.amounts.items():
            out[k] = out.get(k, 0) - v
        return Resources(out)

    def __mul__(self, factor: int) -> Resources:
        return Resources({k: v * factor for k, v in self.amounts.items()})

    def fits_in(self, other: Resources) -> bool:
        """True when every amount here is at most the same amount in ``other``."""
        return all(v <= other.amounts.get(k, 0) for k, v in self.amounts.items())

    def is_zero(self) -> bool:
        return not self.amounts

    def any_negative(self) -> bool:
        return any(v < 0 for v in self.amounts.values())

    def clamp_min_zero(self) -> Resources:
        return Resources({k: max(0, v) for k, v in self.amounts.items()})

    def shares(self, total: Resources) -> dict[str, float]:
        """Each amount as a fraction of ``total`` (types the total lacks count as infinitely scarce)."""
        out: dict[str, float] = {}
        for k, v in self.amounts.items():
            cap = total.amounts.get(k, 0)
            out[k] = v / cap if cap > 0 else (float("inf") if v > 0 else 0.0)
        return out

    def dominant_share(self, total: Resources) -> float:
        return max(self.shares(total).values(), default=0.0)

    def to_dict(self) -> dict[str, int]:
        return dict(self.amounts)

    def __str__(self) -> str:
        parts = [f"{k}={v}" for k, v in sorted(self.amounts.items())]
        return "<" + ", ".join(parts) + ">"


Resources.ZERO = Resources()


def total(items: Iterable[Resources]) -> Resources:
    out: dict[str, int] = {}
    for r in items:
        for k, v in r.amounts.items():
            out[k] = out.get(k, 0) + v
    return Resources(out)


def component_max(a: Resources, b: Resources) -> Resources:
    keys = set(a.amounts) | set(b.amounts)
    return Resources({k: max(a.get(k), b.get(k)) for k in keys})
