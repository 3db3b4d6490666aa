"""Greedy asks: a DEFAULT container for every runnable task that is not running yet.

This is what a plain YARN DAG AM does; it takes no notice of the fair share. The altruistic policy
asks DEFAULT only for what must start now and marks the rest ALTRUISTIC.
"""

from __future__ import annotations

from typing import ClassVar

from am.dag_state import DagState
from am.policies.api import AskDecision, AskPolicy, declared, request_id
from common.resources import Resources
from common.terms import AmSignals


class GreedyAsks:
    """One DEFAULT ask per stage with runnable tasks, for all of them."""

    name: ClassVar[str] = "greedy"

    def __init__(self) -> None:
        self._remaining: float | None = None  # the remaining work of the last decision

    def signals(self) -> AmSignals:
        return declared(self._remaining)

    def asks(self, dag: DagState, fair_share: Resources, now: float) -> list[AskDecision]:
        remaining = self._remaining = dag.remaining_work_s(now)
        decisions: list[AskDecision] = []
        for stage in dag.stages:
            wanted = len(dag.runnable(stage.name))
            if wanted == 0:
                continue
            index = dag.stage_index(stage.name)
            decisions.append(
                AskDecision(
                    allocation_request_id=request_id(index, "DEFAULT"),
                    stage=stage.name,
                    priority=dag.depth(stage.name),
                    capability=stage.capability,
                    num_containers=wanted,
                    ask_type="DEFAULT",
                    remaining_work_s=remaining,
                )
            )
        return decisions


_: type[AskPolicy] = GreedyAsks
