"""Run history for SLO inference (Morpheus §4): what the RM records about applications as they run.

* An application declares the datasets it reads and writes: ``SubmitSpec.inputs`` / ``outputs`` (the shepherd
  CLI fills them from the job file's ``inputs`` / ``outputs``), or, from YARN clients, application tags
  ``shepherd.inputs=PATH[,PATH...]`` and ``shepherd.outputs=PATH[,PATH...]`` (repeatable).
* When it starts running (its AM container runs, or an unmanaged AM registers) it **reads** each declared
  input: one ``DatasetAccessRecord`` per input, once per application.
* When it ends, its **run** is recorded (``JobRunRecord``): job = the application's name, its queue, user,
  submit/start/end times, success, and its skyline — the containers of one *unit* it had in use in each
  step (the reservation plan's step) from the start of its first container. The unit is its most common
  container size (ties: the one with more container-seconds, then the smaller); a container counts as its
  largest multiple of the unit over the unit's resource types. When it succeeded it **writes** each
  declared output at its finish time.

Pure: ``RunHistory`` listens to the ledger's lifecycle events and marks its records in the ledger's journal,
so they are persisted with the change that caused them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from common.errors import BadRequest
from common.resources import Resources
from rm.core.entities import App
from rm.core.events import AppFinished, AppStarted, Event, Journal
from rm.core.records import DatasetAccessRecord, JobRunRecord
from rm.core.reservation.inference import DatasetAccess, RunRecord, skyline_from_containers

INPUTS_TAG = "shepherd.inputs"
OUTPUTS_TAG = "shepherd.outputs"
MAX_DATASETS = 64  # declared inputs (or outputs) per application
MAX_PATH = 1024
MAX_SKYLINE_STEPS = 7 * 24 * 60  # a week of one-minute steps; longer runs keep their first week

Span = tuple[float, float, Resources]


def datasets_from_tags(tags: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(inputs, outputs) declared by ``shepherd.inputs=a,b`` / ``shepherd.outputs=c`` tags, in order."""
    inputs: list[str] = []
    outputs: list[str] = []
    for tag in tags:
        key, sep, value = tag.partition("=")
        if not sep:
            continue
        key = key.strip().lower()
        if key in (INPUTS_TAG, OUTPUTS_TAG):
            paths = [p.strip() for p in value.split(",") if p.strip()]
            (inputs if key == INPUTS_TAG else outputs).extend(paths)
    return tuple(inputs), tuple(outputs)


def check_datasets(paths: Iterable[object], what: str) -> tuple[str, ...]:
    """Declared dataset paths, stripped and without duplicates; a bad one is a 400 (nothing changed)."""
    out: list[str] = []
    for p in paths:
        if not isinstance(p, str):
            raise BadRequest(f"{what}: a dataset path must be a string, got {p!r}")
        path = p.strip()
        if not path:
            raise BadRequest(f"{what}: a dataset path is empty")
        if len(path) > MAX_PATH:
            raise BadRequest(f"{what}: the dataset path {path[:40]!r}... is longer than {MAX_PATH} characters")
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in path):
            raise BadRequest(f"{what}: the dataset path {path!r} contains control characters")
        out.append(path)
    unique = tuple(dict.fromkeys(out))
    if len(unique) > MAX_DATASETS:
        raise BadRequest(f"{what}: at most {MAX_DATASETS} datasets may be declared, got {len(unique)}")
    return unique


def access_id(app_id: str, kind: str, path: str) -> str:
    return f"{app_id} {kind} {path}"


def accesses(app_id: str, paths: Iterable[str], kind: str, time: float) -> list[DatasetAccessRecord]:
    return [DatasetAccessRecord(access_id(app_id, kind, p), p, kind, time, app_id) for p in paths]


def common_unit(spans: Sequence[Span]) -> Resources | None:
    """The most common container size of ``spans`` (ties: more container-seconds, then the smaller)."""
    if not spans:
        return None
    count: Counter[Resources] = Counter()
    seconds: dict[Resources, float] = {}
    for start, end, res in spans:
        count[res] += 1
        seconds[res] = seconds.get(res, 0.0) + max(0.0, end - start)
    return min(count, key=lambda r: (-count[r], -seconds[r], sorted(r.amounts.items())))


def run_of(app: App, *, step_s: int) -> JobRunRecord:
    """The run record of an ended application."""
    spans = [s for s in app.spans if s[1] > s[0]]
    unit = common_unit(spans) or app.am_resource
    start = min((s[0] for s in spans), default=app.launch_time or app.submit_time)
    skyline = skyline_from_containers(spans, start=start, step_s=step_s, unit=unit) if spans else ()
    return JobRunRecord(
        app_id=app.app_id, job=app.name, queue=app.queue, user=app.user, submit_time=app.submit_time,
        start_time=start, finish_time=app.finish_time,
        succeeded=app.state == "FINISHED" and app.final_status == "SUCCEEDED",
        skyline=skyline[:MAX_SKYLINE_STEPS], unit=unit.to_dict(), step_s=step_s, inputs=app.inputs,
        outputs=app.outputs,
    )


class RunHistory:
    """Listens to the ledger: an app that starts reads its declared inputs (recorded once per app); one
    that ends is a run of its recurring job, and writes its declared outputs when it succeeded."""

    hears: frozenset[type] = frozenset({AppStarted, AppFinished})

    def __init__(self, step_s: int) -> None:
        self.step_s = step_s

    def on_event(self, event: Event, journal: Journal) -> None:
        if not journal.keep:  # nothing would be stored
            return
        if isinstance(event, AppStarted):
            app = event.app
            if app.inputs_read:
                return
            app.inputs_read = True
            for rec in accesses(app.app_id, app.inputs, "read", event.now):
                journal.mark(rec)
        elif isinstance(event, AppFinished):
            app = event.app
            run = run_of(app, step_s=self.step_s)
            journal.mark(run)
            if run.succeeded:
                for rec in accesses(app.app_id, app.outputs, "write", event.now):
                    journal.mark(rec)


def to_run(rec: JobRunRecord) -> RunRecord:
    return RunRecord(
        job=rec.job, app_id=rec.app_id, submit_time=rec.submit_time, start_time=rec.start_time,
        finish_time=rec.finish_time, skyline=tuple(rec.skyline), unit=Resources(rec.unit), queue=rec.queue,
        user=rec.user, inputs=tuple(rec.inputs), outputs=tuple(rec.outputs), succeeded=rec.succeeded,
    )


def to_access(rec: DatasetAccessRecord) -> DatasetAccess:
    return DatasetAccess(rec.path, "write" if rec.kind == "write" else "read", rec.time, rec.app_id)
