"""The store lease: which ResourceManager may write the state store.

One row (``store_lease``) names the holder (``owner``, e.g. ``host:pid:random``), an ``epoch`` that grows by one
at every take-over, and when the holder last renewed it. The rules, all compare-and-set statements on that row so
SQLite and PostgreSQL serialize them the same way:

* take: succeeds when nobody holds the lease (a clean shutdown released it) or the holder's lease has expired
  (it was not renewed for its lease time: the holder crashed); the taker's epoch is the old one + 1;
* renew: the holder moves its expiry forward, only while the epoch and owner are still its own;
* fence: the first statement of every write transaction is that same renewal; when it matches no row, another
  ResourceManager has taken the store over and the transaction is rolled back (:class:`LeaseLost`). The row
  lock it takes also orders a take-over after any write already in flight;
* release: on a clean shutdown, so a restarted RM need not wait for the lease time;
* take over: from a holder known to be dead (an RM on this host whose process is gone), at once; the same
  compare-and-set on (owner, epoch), so a holder that did renew in between keeps the lease.

Times come from the caller's clock, so the hosts of an active/standby pair need synchronized clocks (NTP) to
well within the lease time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, inspect, or_, select, update

from .errors import LeaseLost
from .models import LEASE_ROW_ID, LeaseRow


@dataclass(frozen=True, slots=True)
class Lease:
    owner: str  # "" while nobody holds it
    epoch: int
    acquired_at: float
    renewed_at: float
    expires_at: float

    def describe(self, now: float) -> str:
        """Who holds it and for how long, for messages."""
        if not self.owner:
            return f"nobody holds the lease (epoch {self.epoch})"
        left = self.expires_at - now
        expiry = f"its lease expires in {left:.1f} s" if left > 0 else f"its lease expired {-left:.1f} s ago"
        return (f"held by {self.owner} (epoch {self.epoch}, renewed {max(0.0, now - self.renewed_at):.1f} s ago; "
                f"{expiry})")




def has_lease_table(conn: Connection) -> bool:
    return inspect(conn).has_table(LeaseRow.__tablename__)


def read(conn: Connection) -> Lease | None:
    # the columns of every schema version since leases began (the lease is read before the store is migrated)
    columns = (LeaseRow.owner, LeaseRow.epoch, LeaseRow.acquired_at, LeaseRow.renewed_at, LeaseRow.expires_at)
    row = conn.execute(select(*columns).where(LeaseRow.id == LEASE_ROW_ID)).mappings().first()
    if row is None:
        return None
    return Lease(str(row["owner"]), int(row["epoch"]), float(row["acquired_at"]), float(row["renewed_at"]),
                 float(row["expires_at"]))


def take(conn: Connection, owner: str, lease_s: float, now: float) -> bool:
    """Take the lease if it is free or expired; True if this call took it."""
    stmt = (
        update(LeaseRow)
        .where(LeaseRow.id == LEASE_ROW_ID, or_(LeaseRow.owner == "", LeaseRow.expires_at < now))
        .values(owner=owner, epoch=LeaseRow.epoch + 1, acquired_at=now, renewed_at=now, expires_at=now + lease_s)
    )
    return conn.execute(stmt).rowcount == 1


# built once: renewing is the first statement of every store write, and building the statement costs five times
# what running it does
_RENEW = (
    update(LeaseRow)
    .where(LeaseRow.id == LEASE_ROW_ID, LeaseRow.owner == bindparam("holder"), LeaseRow.epoch == bindparam("held_epoch"))
    .values(renewed_at=bindparam("now"), expires_at=bindparam("until"))
)


def renew(conn: Connection, owner: str, epoch: int, lease_s: float, now: float) -> None:
    """Extend the lease held as (owner, epoch); raises LeaseLost if it is no longer held so (the fencing check)."""
    if conn.execute(_RENEW, {"holder": owner, "held_epoch": epoch, "now": now, "until": now + lease_s}).rowcount != 1:
        current = read(conn)
        holder = current.describe(now) if current is not None else "the lease row is gone"
        raise LeaseLost(f"this ResourceManager ({owner}, epoch {epoch}) no longer holds the state store: {holder}")


def release(conn: Connection, owner: str, epoch: int, now: float) -> bool:
    """Give the lease up (a clean shutdown); False if it was not held as (owner, epoch)."""
    stmt = (
        update(LeaseRow)
        .where(LeaseRow.id == LEASE_ROW_ID, LeaseRow.owner == owner, LeaseRow.epoch == epoch)
        .values(owner="", renewed_at=now, expires_at=now)
    )
    return conn.execute(stmt).rowcount == 1


def take_over(conn: Connection, owner: str, lease_s: float, now: float, dead: Lease) -> bool:
    """Take the lease from ``dead`` (its holder is known to have crashed) unless it changed hands or renewed since
    it was read; True if this call took it."""
    stmt = (
        update(LeaseRow)
        .where(LeaseRow.id == LEASE_ROW_ID, LeaseRow.owner == dead.owner, LeaseRow.epoch == dead.epoch,
               LeaseRow.renewed_at == dead.renewed_at)
        .values(owner=owner, epoch=LeaseRow.epoch + 1, acquired_at=now, renewed_at=now, expires_at=now + lease_s)
    )
    return conn.execute(stmt).rowcount == 1


def advertise(conn: Connection, owner: str, epoch: int, endpoints: dict[str, str]) -> None:
    """Record where the holder serves (its gRPC, REST and IPC addresses), for standbys to redirect clients."""
    stmt = (
        update(LeaseRow)
        .where(LeaseRow.id == LEASE_ROW_ID, LeaseRow.owner == owner, LeaseRow.epoch == epoch)
        .values(endpoints=json.dumps(endpoints, sort_keys=True))
    )
    if conn.execute(stmt).rowcount != 1:
        raise LeaseLost(f"this ResourceManager ({owner}, epoch {epoch}) no longer holds the state store")


def endpoints(conn: Connection) -> dict[str, str]:
    """Where the lease holder serves, as it advertised; empty if it did not (yet)."""
    if "endpoints" not in {c["name"] for c in inspect(conn).get_columns(LeaseRow.__tablename__)}:
        return {}
    text = conn.execute(select(LeaseRow.endpoints).where(LeaseRow.id == LEASE_ROW_ID)).scalar()
    try:
        got = json.loads(text or "{}")
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in got.items()} if isinstance(got, dict) else {}
