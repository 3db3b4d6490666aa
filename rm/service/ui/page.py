"""The page shell every UI page shares (nav bar, "updated N s ago", live refresh) and small HTML helpers.

Pages are plain strings built from escaped parts: ``esc`` for any text that came from the cluster (app names,
diagnostics, users, tags), attribute values included. Nothing here reads the RM; pages pass their body in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING
from urllib.parse import quote

from common import durations

if TYPE_CHECKING:
    from rm.core.entities import App
    from rm.service.authz import Authorizer, Caller

STATIC = "/ui/static"
NAV = (
    ("overview", "/ui", "Overview"),
    ("apps", "/ui/apps", "Applications"),
    ("nodes", "/ui/nodes", "Nodes"),
    ("queues", "/ui/queues", "Queues"),
    ("reservations", "/ui/reservations", "Reservations"),
    ("deadlines", "/ui/deadlines", "Deadlines"),
)
REFRESH_S = 5  # how often an open page reloads its content (the JS poll; 30 s without JS)


def _everyone(app: App) -> bool:
    return True


@dataclass(frozen=True)
class Reader:
    """Who reads a page of application details: ``may_view`` says whose apps it sees in full (VIEW_APP);
    ``signed_in``: the browser sent a credential; ``secured``: the RM wants one; ``refused``: why the one it sent
    was not taken."""

    who: Caller
    signed_in: bool = False
    secured: bool = False
    refused: str = ""
    may_view: Callable[[App], bool] = _everyone

    def view(self, authz: Authorizer) -> Reader:
        return replace(self, may_view=lambda app: authz.may_view(self.who, app))


def sign_in(reader: Reader | None) -> str:
    """The header's sign-in: who reads, and a field for a credential (ui.js keeps it in a cookie for /ui)."""
    if reader is None or not reader.secured:
        return ""
    if reader.signed_in and not reader.refused:
        return (f'<span class="who" id="who" data-user="{esc(reader.who.user)}">{esc(reader.who.user)}</span>'
                '<button type="button" id="signout" class="quiet">sign out</button>')
    note = f'<span class="warn" id="signin-refused">{esc(reader.refused)}</span>' if reader.refused else ""
    return (f'{note}<span class="who" id="who" data-user="{esc(reader.who.user)}">{esc(reader.who.user)}</span>'
            '<form id="signin" class="signin"><input type="password" id="signin-credential" autocomplete="off" '
            'placeholder="client secret or user token" aria-label="client secret or user token">'
            '<button type="submit">sign in</button></form>')


def esc(value: object) -> str:
    return escape(str(value), quote=True)


def q(value: str) -> str:
    """A path segment (an app or node id) for a URL."""
    return quote(value, safe="")


def page(title: str, active: str, body: str, *, now: float, refresh: bool = True,
         reader: Reader | None = None) -> str:
    """A whole HTML document: nav bar, title, body; ``now`` (seconds) is when the data was read; ``reader``:
    who reads it, shown with the sign-in in the header (pages of application details)."""
    on = ' class="on"'
    links = "".join(f'<a href="{href}"{on if key == active else ""}>{label}</a>' for key, href, label in NAV)
    rendered = int(now * 1000)
    noscript = f'<noscript><meta http-equiv="refresh" content="{REFRESH_S * 6}"></noscript>' if refresh else ""
    return (
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)} · shepherd</title>"
        f'<link rel="stylesheet" href="{STATIC}/ui.css">'
        f'<link rel="icon" href="{STATIC}/favicon.svg" type="image/svg+xml">{noscript}'
        f'<script defer src="{STATIC}/ui.js"></script></head>'
        f'<body data-refresh="{REFRESH_S if refresh else 0}">'
        f'<header><a class="brand" href="/ui">shepherd</a><nav>{links}</nav>'
        f'<span class="stamp" id="stamp" data-rendered="{rendered}">updated {fmt_time(now)} UTC</span>'
        '<button type="button" id="pause" class="quiet" hidden>pause</button>'
        f'<span class="reader">{sign_in(reader)}</span></header>'
        f'<main id="main"><h1>{esc(title)}</h1>{body}</main>'
        '<footer>REST API: <a href="/ws/v1/cluster/info">/ws/v1/cluster</a> · '
        '<a href="/docs">API docs</a> · <a href="/metrics">Prometheus metrics</a></footer>'
        "</body></html>"
    )


def fmt_time(t: float) -> str:
    """Seconds since the epoch as UTC wall time; "—" for zero (not happened)."""
    if not t:
        return "—"
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def fmt_ms(t_ms: float | None) -> str:
    return fmt_time(t_ms / 1000) if t_ms else "—"


def fmt_duration(seconds: float | None) -> str:
    return "—" if seconds is None else durations.compact(seconds, " ")


def fmt_mb(mb: float) -> str:
    if abs(mb) >= 1024 * 1024:
        return f"{mb / 1024 / 1024:.1f} TB"
    if abs(mb) >= 1024:
        return f"{mb / 1024:.1f} GB"
    return f"{int(mb)} MB"


def pct(part: float, whole: float) -> float:
    return 0.0 if whole <= 0 else max(0.0, min(100.0, 100.0 * part / whole))


def bar(percent: float, *, label: str = "", kind: str = "", attrs: str = "") -> str:
    """A horizontal bar filled to ``percent`` (0-100), with an optional text label beside it."""
    width = max(0.0, min(100.0, percent))
    cls = f"fill {kind}".strip()
    text = f'<span class="barlabel">{esc(label)}</span>' if label else ""
    return (f'<span class="bar" {attrs}><span class="{cls}" style="width:{width:.2f}%"></span></span>{text}')


def badge(state: str) -> str:
    return f'<span class="badge s-{esc(state.lower())}">{esc(state)}</span>'


def table(headers: Sequence[str], rows: Iterable[str], *, cls: str = "", empty: str = "nothing to show") -> str:
    """A table of pre-rendered ``<tr>`` rows; ``empty`` when there are none."""
    body = "".join(rows)
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    if not body:
        body = f'<tr class="empty"><td colspan="{len(headers)}">{esc(empty)}</td></tr>'
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def cards(items: Iterable[tuple[str, str, object]], links: Mapping[str, str] | None = None) -> str:
    """Number cards: (metric key for ``data-metric``, label, value); a card whose key ``links`` names is a link."""
    out = []
    for key, label, value in items:
        inner = f'<div class="num" data-metric="{esc(key)}">{esc(value)}</div><div class="lbl">{esc(label)}</div>'
        href = (links or {}).get(key)
        out.append(f'<a class="card" href="{esc(href)}">{inner}</a>' if href else f'<div class="card">{inner}</div>')
    return f'<div class="cards">{"".join(out)}</div>'


def section(title: str, body: str, *, ident: str = "") -> str:
    ident_attr = f' id="{esc(ident)}"' if ident else ""
    return f'<section{ident_attr}><h2>{esc(title)}</h2>{body}</section>'
