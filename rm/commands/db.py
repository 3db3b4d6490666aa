"""``shepherd db``: the state store's schema, looked at and upgraded without starting a ResourceManager.

An RM brings its store to the newest schema when it starts; these commands let an operator see what a new
build would change first, and apply it as a step of its own (before starting the new RMs of a pair, say)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import typer
from rich.table import Table

from rm.commands.output import console, error

db_group = typer.Typer(no_args_is_help=True, help="The state store's schema: status, upgrade.")

STORE_OPT = typer.Option(None, "--store-url", help="SQLAlchemy URL of the state store (default: "
                         "$SHEPHERD_STORE_URL, else the SQLite file in --data-dir)")
DATA_DIR_OPT = typer.Option(Path(".shepherd"), "--data-dir", help="the RM's --data-dir, where its SQLite store "
                            "lives (for a cluster of `shepherd up --data-dir D`: D/rm)")


def _store(store_url: str | None, data_dir: Path):  # type: ignore[no-untyped-def]
    from rm.service.store import store as st

    url = store_url or os.environ.get("SHEPHERD_STORE_URL") or st.default_sqlite_url(data_dir)
    return st.Store(url)


@db_group.command("status")
def status(store_url: str | None = STORE_OPT, data_dir: Path = DATA_DIR_OPT) -> None:
    """The store's schema revision against this build's newest, the revisions an upgrade would apply, and
    who holds the store. Exits 0 when the schema is current, 1 when an upgrade is due, 2 when there is no
    store."""
    from rm.service.store.errors import StoreError

    store = _store(store_url, data_dir)
    try:
        if not store.exists():
            error(f"no state store at {store.url}")
            raise typer.Exit(2)
        current, head, pending = store.revisions()
        lease = store.read_lease()
    except StoreError as exc:
        error(str(exc))
        raise typer.Exit(2) from None
    table = Table(show_header=False)
    table.add_row("store", store.url)
    table.add_row("schema", current or "none")
    table.add_row("newest", head)
    table.add_row("to apply", ", ".join(pending) or "nothing: current")
    table.add_row("lease", lease.describe(time.time()) if lease is not None else "none")
    console.print(table)
    raise typer.Exit(1 if pending else 0)


@db_group.command("upgrade")
def upgrade(store_url: str | None = STORE_OPT, data_dir: Path = DATA_DIR_OPT,
            create: bool = typer.Option(False, "--create", help="create a new, empty store if there is none")) -> None:
    """Bring the store's schema to this build's newest revision (what an RM does when it starts). A missing
    store is created only with --create."""
    from rm.service.store.errors import StoreError

    store = _store(store_url, data_dir)
    try:
        if not store.exists() and not create:
            error(f"no state store at {store.url}: pass --create to create a new, empty one")
            raise typer.Exit(2)
        existed = store.exists()
        before, _, pending = store.revisions() if existed else (None, "", [])
        store.migrate()
        after, _, _ = store.revisions()
    except StoreError as exc:
        error(str(exc))
        raise typer.Exit(1) from None
    if not existed:
        console.print(f"{store.url}: created at {after}")
    elif not pending:
        console.print(f"{store.url}: already at {after}")
    else:
        console.print(f"{store.url}: {before or 'none'} -> {after} ({', '.join(pending)})")
