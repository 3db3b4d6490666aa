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
from am.policies.jockey.controller import ControlConfig
from am.policies.jockey.profile import JobProfile
from am.policies.jockey_policy import JockeyAmdahlAsks, JockeyAsks, JockeyMaxAsks, JockeyStaticAsks

JOCKEY_POLICIES: dict[str, type[JockeyAsks]] = {
    p.name: p for p in (JockeyAsks, JockeyStaticAsks, JockeyAmdahlAsks, JockeyMaxAsks)}
ASK_POLICIES: dict[str, type[AskPolicy]] = {GreedyAsks.name: GreedyAsks, CarbyneAsks.name: CarbyneAsks,
                                            **JOCKEY_POLICIES}


def make_ask_policy(name: str = GreedyAsks.name, *, p_altruism: float | None = None, seed: int = 0,
                    floor: float = 0.0, started_at: float | None = None, profile: JobProfile | None = None,
                    control: ControlConfig | None = None) -> AskPolicy:
    """The ask policy registered under ``name`` (``p_altruism``, ``seed`` and ``floor`` tune the carbyne
    policy, and the jockey ones' for jobs without a deadline; ``started_at`` is when a jockey job was
    submitted, which its deadline counts from: None, its AM's first decision; ``profile`` is a jockey job's
    profile from earlier runs, None: from its job file; ``control`` the jockey controller's settings)."""
    if name not in ASK_POLICIES:
        known = ", ".join(sorted(ASK_POLICIES))
        raise ValueError(f"unknown ask policy {name!r}; known: {known}")
    altruism = 1.0 if p_altruism is None else p_altruism
    if name == CarbyneAsks.name:
        return CarbyneAsks(p_altruism=altruism, seed=seed, floor=floor)
    if name in JOCKEY_POLICIES:
        return JOCKEY_POLICIES[name](seed=seed, started_at=started_at, p_altruism=altruism, floor=floor,
                                     profile=profile, config=control)
    return ASK_POLICIES[name]()


__all__ = [
    "ALTRUISTIC_BASE",
    "ASK_POLICIES",
    "JOCKEY_POLICIES",
    "AskDecision",
    "AskPolicy",
    "AskTable",
    "AskType",
    "CarbyneAsks",
    "GreedyAsks",
    "JockeyAmdahlAsks",
    "JockeyAsks",
    "JockeyMaxAsks",
    "JockeyStaticAsks",
    "make_ask_policy",
    "request_id",
    "stage_index_of",
]
