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


def make_ask_policy(name: str = GreedyAsks.name) -> AskPolicy:
    """The ask policy registered under ``name``."""
    try:
        factory = ASK_POLICIES[name]
    except KeyError:
        known = ", ".join(sorted(ASK_POLICIES))
        raise ValueError(f"unknown ask policy {name!r}; known: {known}") from None
    return factory()


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
