"""The ledger: the one owner of nodes, apps, attempts, containers and asks.

Commands come in (submit, kill, heartbeats, allocate calls, plans to apply), events go out to listeners (run
history, reservations, waiting diagnostics), and changed durable records collect in its journal for the
service to store. The live ResourceManager, the simulator and the test harness all drive this one class.
Its parts, one module each: ``base`` (state and lifecycle primitives), ``apps``, ``deadline`` (a deadline
changed at run time), ``nodes``, ``am`` (the ApplicationMaster protocol), ``plans`` (snapshot, plan
application, preemption, DRA), ``recovery`` and ``seed`` (state built directly, for the test harness and the
dry run).
"""

from __future__ import annotations

from rm.core.ledger.am import AmCommands
from rm.core.ledger.apps import AppCommands
from rm.core.ledger.deadline import DeadlineCommands
from rm.core.ledger.nodes import NodeCommands
from rm.core.ledger.plans import PlanCommands
from rm.core.ledger.recovery import Recovery
from rm.core.ledger.seed import Seeding


class Ledger(AppCommands, DeadlineCommands, NodeCommands, AmCommands, PlanCommands, Recovery, Seeding):
    """See the module docstring; every method takes ``now`` and does no I/O."""


__all__ = ["Ledger"]
