"""``shepherd admin check-health``: is the cluster fit to run work? (YARN's ``rmadmin -checkHealth``, for scripts
and monitoring: an exit status and one line.)"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import typer

from rm.commands.output import console, error
from rm.commands.rest import rest_base
from rm.commands.target import resolve_rest_option

HEALTHY, UNREACHABLE, BAD_USAGE, STANDBY_ONLY, NODES_UNHEALTHY = 0, 1, 2, 3, 4
# nodes an operator took out on purpose, or that left cleanly, are not a health problem
SICK_STATES = ("UNHEALTHY", "LOST")


@dataclass(frozen=True, slots=True)
class Probe:
    """What one ResourceManager answered: its REST URL, its cluster info (None: unreachable, with why), and,
    for the active one, its nodes."""
    url: str
    info: Mapping[str, Any] | None
    why: str = ""
    nodes: Sequence[Mapping[str, Any]] = ()


def verdict(probes: Sequence[Probe]) -> tuple[int, str]:
    """The exit status and the one line that says why."""
    active = [p for p in probes if p.info is not None and str(p.info.get("haState", "ACTIVE")).upper() == "ACTIVE"]
    if not active:
        answering = [p for p in probes if p.info is not None]
        if answering:
            return STANDBY_ONLY, (f"no active ResourceManager: {', '.join(p.url for p in answering)} "
                                  f"{'is' if len(answering) == 1 else 'are'} standing by")
        return UNREACHABLE, "no ResourceManager answers: " + "; ".join(f"{p.url}: {p.why}" for p in probes)
    rm = active[0]
    states = Counter(str(n.get("state", "")) for n in rm.nodes)
    sick = [n for n in rm.nodes if n.get("state") in SICK_STATES]
    if sick:
        names = ", ".join(f"{n.get('id')} {n.get('state')}" + (f" ({n['healthReport']})" if n.get("healthReport")
                                                              else "") for n in sick[:5])
        more = f" and {len(sick) - 5} more" if len(sick) > 5 else ""
        return NODES_UNHEALTHY, f"{len(sick)} of {len(rm.nodes)} node(s) not healthy at {rm.url}: {names}{more}"
    if not states["RUNNING"]:
        return NODES_UNHEALTHY, f"the ResourceManager at {rm.url} has no RUNNING node ({len(rm.nodes)} known)"
    others = ", ".join(f"{k} {v}" for k, v in sorted(states.items()) if k != "RUNNING")
    return HEALTHY, (f"healthy: the ResourceManager at {rm.url} is active with {states['RUNNING']} RUNNING "
                     f"node(s){f' ({others})' if others else ''}")


def probe(url: str, timeout: float) -> Probe:
    try:
        resp = httpx.get(f"{url}/ws/v1/cluster/info", timeout=timeout, follow_redirects=False)
        resp.raise_for_status()
        info = resp.json()["clusterInfo"]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        return Probe(url, None, str(exc) or type(exc).__name__)
    if str(info.get("haState", "ACTIVE")).upper() != "ACTIVE":
        return Probe(url, info)
    try:
        resp = httpx.get(f"{url}/ws/v1/cluster/nodes", timeout=timeout, follow_redirects=False)
        resp.raise_for_status()
        nodes = (resp.json().get("nodes") or {}).get("node") or []
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        return Probe(url, None, f"answers /ws/v1/cluster/info but not /ws/v1/cluster/nodes: {exc}")
    return Probe(url, info, nodes=nodes)


def check_health(
    rest: str | None = typer.Option(None, "--rest", callback=resolve_rest_option,
                                    help="the RM's REST URL, or several comma-separated (an active/standby pair) "
                                         "\\[default: `shepherd --cluster`, $SHEPHERD_REST, the current cluster, "
                                         "yarn-site.xml, http://127.0.0.1:8088]"),
    timeout: float = typer.Option(5.0, "--timeout", min=0.1, help="seconds to wait for each answer"),
) -> None:
    """Exit 0 if an active ResourceManager answers and no node is UNHEALTHY or LOST (and one at least is
    RUNNING); else non-zero, with one line saying why: 1 no RM answers, 3 only standby RMs answer, 4 nodes
    unhealthy, lost or none running (YARN's `rmadmin -checkHealth`). Decommissioned and shut-down nodes do
    not count."""
    urls = [rest_base(u.strip()) for u in (rest or "").split(",") if u.strip()] or [rest_base(None)]
    code, line = verdict([probe(u, timeout) for u in urls])
    if code == HEALTHY:
        console.print(line, highlight=False, soft_wrap=True)
    else:
        error(line, prefix="unhealthy")
    raise typer.Exit(code)
