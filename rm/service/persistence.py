"""Getting the ledger's changes into the state store, and keeping the store to one writer.

:class:`StoreWriter` is the write queue behind ``ResourceManager.persist()``. Changed records wait in it,
coalesced by record key (a later version of a record replaces the pending one, as in the core), until a write
on the store thread commits them. A write that fails keeps them queued: the next ``flush()`` tries again, and so
does a background retry with backoff, so the store catches up when nobody calls. ``flush()`` returns once every
change queued before the call is durable and raises :class:`StoreUnavailable` (503, Hadoop's
RetriableException) while it is not. The in-memory state is never rolled back.

:func:`open_store` checks that the store exists (or creates it when asked), takes its lease and migrates it;
:class:`LeaseKeeper` renews the lease. When another ResourceManager has taken the store over, the writer stops
writing for good and calls its ``on_fenced`` hook, which stops the RM.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, TypeVar

import psutil

from common.errors import StoreUnavailable
from rm.core.records import Record
from rm.service.store import Lease, LeaseLost, Store, StoreError, StoreLocked, record_key

log = logging.getLogger("shepherd.rm.store")
T = TypeVar("T")

RETRY_FIRST_S = 0.5
RETRY_MAX_S = 5.0


def crashed_here(owner: str) -> bool:
    """Whether a lease ``owner`` (``lease_owner()``'s form) names an RM process on this host that no longer runs."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return False
    try:  # gone, or a zombie its parent has not reaped yet
        return psutil.Process(int(pid)).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def lease_owner() -> str:
    """This process's name in the lease row: host:pid:random."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


@dataclass(slots=True)
class _Pending:
    record: Record
    seq: int  # when this version was queued


class StoreWriter:
    """The write queue in front of one Store. All methods run on the RM's event loop; writes run on
    ``executor`` (one thread, so they keep their order)."""

    def __init__(
        self,
        store: Store,
        executor: Executor,
        *,
        clock: Callable[[], float],
        on_fenced: Callable[[LeaseLost], None] = lambda _: None,
        on_written: Callable[[list[Record]], None] = lambda _: None,
        on_timed: Callable[[float, int], None] = lambda seconds, records: None,
        retry_first_s: float = RETRY_FIRST_S,
        retry_max_s: float = RETRY_MAX_S,
    ) -> None:
        self._store = store
        self._executor = executor
        self._clock = clock
        self._on_fenced = on_fenced
        self._on_written = on_written  # told the records of every write, once they are durable
        self._on_timed = on_timed  # told how long each write that succeeded took, and how many records it held
        self._retry_first_s = retry_first_s
        self._retry_max_s = retry_max_s
        self._pending: dict[tuple[str, Any], _Pending] = {}
        self._seq = 0  # changes queued so far
        self._durable = 0  # every change numbered up to this one is in the store
        self._inflight: asyncio.Future[None] | None = None
        self._retry: asyncio.Task[None] | None = None
        self._outage_since: float | None = None
        self._last_error = ""
        self.failed_writes = 0  # write transactions that failed (a Prometheus counter)
        self.dropped = 0  # records the database refused for good (never retried)
        self.fenced: LeaseLost | None = None

    @property
    def pending(self) -> int:
        """Records waiting to be written."""
        return len(self._pending)

    @property
    def outage(self) -> bool:
        return self._outage_since is not None

    def add(self, records: Iterable[Record]) -> None:
        """Queue changed records; a later version of a queued record replaces it in place."""
        for record in records:
            self._seq += 1
            key = record_key(record)
            entry = self._pending.get(key)
            if entry is None:
                self._pending[key] = _Pending(record, self._seq)
            else:
                entry.record = record
                entry.seq = self._seq

    async def flush(self) -> None:
        """Return once every change queued so far is durable; raise StoreUnavailable while it is not."""
        target = self._seq
        while self._durable < target:
            if self.fenced is not None:
                raise StoreUnavailable(f"this ResourceManager no longer writes the state store: {self.fenced}")
            if self._inflight is None:
                self._inflight = asyncio.ensure_future(self._write_pending())
            try:
                # shielded: a caller that goes away (a client disconnect cancels its handler) leaves the write be
                await asyncio.shield(self._inflight)
            except StoreError as e:
                if self.fenced is not None:
                    continue  # answered at the top of the loop
                raise StoreUnavailable(
                    f"the state store is unavailable; {self.pending} change(s) are queued and retried: {e}") from None

    async def close(self, timeout: float) -> int:
        """One last attempt to write what is queued (shutdown). Returns how many records are left unwritten."""
        if self._retry is not None:
            self._retry.cancel()
        if self._pending and self.fenced is None:
            with contextlib.suppress(StoreUnavailable, TimeoutError):
                await asyncio.wait_for(self.flush(), timeout)
        if self._pending:
            log.error("%d change(s) could not be written to the state store before shutdown and are lost",
                      len(self._pending))
        return len(self._pending)

    # -- internals -------------------------------------------------------------------------------

    async def _write_pending(self) -> None:
        """One write of everything queued now; only one runs at a time."""
        try:
            batch = {key: entry.record for key, entry in self._pending.items()}
            upto = self._seq
            loop = asyncio.get_running_loop()
            started = time.perf_counter()
            try:
                await loop.run_in_executor(self._executor, self._store.write, list(batch.values()))
                self._on_timed(time.perf_counter() - started, len(batch))
            except LeaseLost as e:
                self.lost_lease(e)
                raise
            except StoreError as e:
                if e.transient:
                    self._failed(e)
                    raise
                await self._isolate(batch, e)
            self._written(batch, upto)
        finally:
            self._inflight = None

    def _written(self, batch: dict[tuple[str, Any], Record], upto: int) -> None:
        self._on_written(list(batch.values()))
        for key, record in batch.items():
            entry = self._pending.get(key)
            if entry is not None and entry.record is record:  # not changed again while it was being written
                del self._pending[key]
        self._durable = max(self._durable, upto)
        if self._outage_since is not None:
            log.warning("the state store is writable again after %.1f s; the queued changes are written",
                        self._clock() - self._outage_since)
            self._outage_since = None

    def _failed(self, e: StoreError) -> None:
        self.failed_writes += 1
        self._last_error = str(e)
        if self._outage_since is None:  # once per outage, not once per attempt
            self._outage_since = self._clock()
            log.error("writing to the state store failed; %d change(s) stay queued and are retried, and "
                      "requests that change state get 503/UNAVAILABLE until it is back: %s", self.pending, e)
        if self._retry is None or self._retry.done():
            self._retry = asyncio.ensure_future(self._retry_loop())

    def lost_lease(self, e: LeaseLost) -> None:
        """Another RM took the store over: never write again, and tell the RM (once)."""
        if self.fenced is None:
            self.fenced = e
            log.critical("%s; this ResourceManager stops instead of writing (%d change(s) not written)", e,
                         self.pending)
            self._on_fenced(e)

    async def _isolate(self, batch: dict[tuple[str, Any], Record], error: StoreError) -> None:
        """A batch the database refuses (not a passing fault): write its records one by one and drop, loudly,
        the ones it refuses, so one bad record cannot hold every later change back forever."""
        log.error("the state store refused a batch of %d record(s) (%s); writing them one by one", len(batch),
                  error)
        loop = asyncio.get_running_loop()
        for key, record in batch.items():
            try:
                await loop.run_in_executor(self._executor, self._store.write, [record])
            except LeaseLost as e:
                self.lost_lease(e)
                raise
            except StoreError as e:
                if e.transient:
                    self._failed(e)
                    raise
                self.dropped += 1
                log.error("dropping %s %s, which the state store refuses: %s", key[0], key[1], e)

    async def _retry_loop(self) -> None:
        delay = self._retry_first_s
        while self._pending and self.fenced is None:
            await asyncio.sleep(delay)
            try:
                await self.flush()
            except StoreUnavailable:
                delay = min(delay * 2, self._retry_max_s)


class LeaseKeeper:
    """Renews the store lease every third of the lease time, on the store thread."""

    def __init__(self, store: Store, writer: StoreWriter, executor: Executor, lease_s: float) -> None:
        self._store = store
        self._writer = writer
        self._executor = executor
        self.interval_s = lease_s / 3
        self._failing = False

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._writer.fenced is None:
            await asyncio.sleep(self.interval_s)
            try:
                await loop.run_in_executor(self._executor, self._store.renew_lease)
            except LeaseLost as e:
                self._writer.lost_lease(e)
                return
            except StoreError as e:
                if not self._failing:
                    log.warning("renewing the store lease failed (retrying): %s", e)
                self._failing = True
            else:
                self._failing = False


async def open_store(
    store: Store,
    run: Callable[..., Awaitable[Any]],
    *,
    owner: str,
    lease_s: float,
    create: bool,
    clock: Callable[[], float],
    poll_s: float = 0.25,
    standby: bool = False,
) -> Lease:
    """Make the store ready for this RM: it must exist (or ``create``), then take its lease and migrate it.

    ``run(fn, *args)`` runs a blocking store call on the store thread. A lease whose holder is alive (it renews
    while we watch) makes this raise StoreLocked — unless ``standby``: then this waits, for as long as it takes,
    until the holder stops renewing it; one left by a crashed RM is taken once it expires, so this waits at most
    the holder's lease time.
    """
    if not await run(store.exists):
        if not create:
            await run(store.require)  # raises StoreMissing, with the message
        log.info("creating a new, empty state store at %s", store.url)
        await run(store.migrate)
    elif await run(store.read_lease) is None:  # a store from before leases: add the lease table first
        await run(store.migrate)
    lease: Lease = await _take_lease(store, run, owner=owner, lease_s=lease_s, clock=clock, poll_s=poll_s,
                                     standby=standby)
    await run(store.migrate)  # idempotent; under the lease, so no other RM runs on a schema in change
    return lease


async def _take_lease(store: Store, run: Callable[..., Awaitable[Any]], *, owner: str, lease_s: float,
                      clock: Callable[[], float], poll_s: float, standby: bool = False) -> Lease:
    first: Lease | None = None
    while True:
        result: tuple[bool, Lease] = await run(store.take_lease, owner, lease_s)
        taken, lease = result
        if taken:
            if first is not None:
                log.warning("took over the state store from %s, whose lease expired", first.owner)
            log.info("holding the state store lease as %s (epoch %d, %.1f s)", owner, lease.epoch, lease_s)
            return lease
        now = clock()
        if crashed_here(lease.owner):
            dead = lease.owner
            taken, lease = await run(store.take_lease_over, owner, lease_s, lease)
            if taken:
                log.warning("took over the state store from %s, a ResourceManager on this host that is gone", dead)
                log.info("holding the state store lease as %s (epoch %d, %.1f s)", owner, lease.epoch, lease_s)
                return lease
            continue
        if first is None:
            first = lease
            log.warning("the state store is %s; waiting to see whether it is still alive", lease.describe(now))
        elif (lease.owner, lease.epoch) != (first.owner, first.epoch) or lease.renewed_at != first.renewed_at:
            if standby:  # the active RM is alive: keep standing by
                if lease.owner != first.owner:
                    log.info("standing by; the active ResourceManager is now %s", lease.owner)
                first = lease
                await asyncio.sleep(poll_s)
                continue
            raise StoreLocked(
                f"another ResourceManager is using the state store {store.url}: {lease.describe(now)}. Stop it "
                "first; a ResourceManager that was killed is taken over once its lease expires")
        await asyncio.sleep(max(0.01, min(poll_s, lease.expires_at - now + 0.01)))
