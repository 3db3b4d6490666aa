"""Recurring jobs' profiles in the live RM (Jockey §4.1): built from the stage reports in the state store, handed
to a job's ApplicationMaster when it registers, and shown by ``GET /ws/v1/shepherd/jobs/{name}/profile``.

The reports are read on the store's thread and the profile is built in a worker thread, so neither blocks the
event loop. A profile is cached per (job, queue, user) until a run of that job ends with a report; then it is
built again at once, in the background, so the next run's registration finds it ready. An RM that starts
has none cached: the first registration of each job builds it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from common.errors import NotFound
from rm.core import job_profiles
from rm.core.job_profiles import StoredProfile
from rm.core.records import StageRunsRecord

if TYPE_CHECKING:
    from rm.service.server import ResourceManager

log = logging.getLogger("shepherd.rm.profiles")

Key = tuple[str, str, str]  # (job, queue, user)


class ProfileService:
    def __init__(self, rm: ResourceManager) -> None:
        self.rm = rm
        self._cache: dict[Key, StoredProfile | None] = {}
        self._version: dict[Key, int] = {}  # bumped when a run ends: a build started before it is not cached
        self._tasks: set[asyncio.Task[None]] = set()
        self.builds = 0  # profiles built (for tests and logs)

    def prune(self) -> int:
        """Drop each job's reports beyond the newest ``RUNS_KEPT`` (called on the store's thread at start)."""
        return self.rm.store.prune_stage_runs(job_profiles.RUNS_KEPT)

    async def _records(self, job: str) -> list[StageRunsRecord]:
        store = self.rm.store
        records: list[StageRunsRecord] = await self.rm.in_store(
            lambda: store.stage_runs(job, limit=job_profiles.RUNS_READ))
        return records

    async def _build(self, key: Key) -> StoredProfile | None:
        version = self._version.get(key, 0)
        records = await self._records(key[0])
        built = await asyncio.to_thread(job_profiles.profile_of, *key, records)
        self.builds += 1
        if self._version.get(key, 0) == version:
            self._cache[key] = built
        return built

    async def profile(self, job: str, queue: str, user: str) -> StoredProfile | None:
        """The profile of ``job``'s earlier runs in ``queue`` by ``user``; None when it has none. Never raises:
        a profile that cannot be read or built is logged, and the job is modelled from its job file."""
        key = (job, queue, user)
        if key in self._cache:
            return self._cache[key]
        try:
            return await self._build(key)
        except Exception:
            log.exception("could not build the profile of job %r (queue %s, user %s)", job, queue, user)
            return None

    def run_ended(self, job: str, queue: str, user: str) -> None:
        """A run of ``job`` reported its stages: its profile is built again now, off the event loop."""
        key = (job, queue, user)
        self._version[key] = self._version.get(key, 0) + 1
        self._cache.pop(key, None)
        task = asyncio.get_running_loop().create_task(self._rebuild(key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _rebuild(self, key: Key) -> None:
        try:
            await self._build(key)
        except Exception:
            log.exception("could not build the profile of job %r (queue %s, user %s)", *key)

    async def shown(self, job: str, queue: str | None = None, user: str | None = None) -> StoredProfile:
        """The profile ``GET .../jobs/{name}/profile`` shows: of the queue and user given, else of the newest
        successful reported run's; 404 when the job has no run to build one from."""
        records = await self._records(job)
        if queue is None or user is None:
            newest = next((r for r in reversed(records) if r.succeeded
                           and (queue is None or r.queue == queue) and (user is None or r.user == user)), None)
            if newest is None:
                raise NotFound(f"no profile of a job named {job!r}: no successful run of it reported its stages")
            queue, user = newest.queue, newest.user
        found = await self.profile(job, queue, user)
        if found is None:
            raise NotFound(f"no profile of job {job!r} in queue {queue} for user {user}: no successful run of it "
                           "reported its stages")
        return found

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
