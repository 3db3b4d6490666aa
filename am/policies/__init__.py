"""AM-side policies (pure, clock injected): which containers a job asks for, and of which kind."""

from __future__ import annotations

from am.policies.altruism import CarbyneAsks
from am.policies.api import (
    ALTRUISTIC_BASE,
    AskDecision,
    AskPolicy,
    AskTable,
    AskType,
    request_id,
    stage_index_of,
)
from am.policies.greedy import GreedyAsks

ASK_POLICIES: dict[str, type[AskPolicy]] = {GreedyAsks.name: GreedyAsks, CarbyneAsks.name: CarbyneAsks}


def make_ask_policy(name: str = GreedyAsks.name, *, p_altruism: float | None = None, seed: int = 0,
                    floor: float = 0.0) -> AskPolicy:
    """The ask policy registered under ``name`` (``p_altruism`` and ``seed`` tune the carbyne policy)."""
    if name not in ASK_POLICIES:
        known = ", ".join(sorted(ASK_POLICIES))
        raise ValueError(f"unknown ask policy {name!r}; known: {known}")
    if name == CarbyneAsks.name:
        return CarbyneAsks(p_altruism=1.0 if p_altruism is None else p_altruism, seed=seed, floor=floor)
    return ASK_POLICIES[name]()


__all__ = [
    "ALTRUISTIC_BASE",
    "ASK_POLICIES",
    "AskDecision",
    "AskPolicy",
    "AskTable",
    "AskType",
    "CarbyneAsks",
    "GreedyAsks",
    "make_ask_policy",
    "request_id",
    "stage_index_of",
]
