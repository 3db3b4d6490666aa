"""Fuzz the ResourceManager's gRPC services with mutated protobuf messages against a live local cluster.

A real cluster (an RM process and ``--nodes`` real NodeManagers, ``rm.local.LocalCluster``) is started and
given something to talk about: apps whose AMs are real containers on the NodeManager (their AMRM tokens are
read back, one AM is registered), a victim app for the client calls, 300 application ids handed out and not
yet used (so that submissions of new apps with a job file and a deadline reach admission and the deadline
book), and a node registered by the fuzzer (its session). Then every method of every service the RM serves from proto/shepherd.proto
(``ResourceTracker``, ``ApplicationMaster``, ``ApplicationClient``, read from the descriptor, so a new method
is fuzzed without a change here) gets ``--count`` requests, interleaved across methods, ``--concurrency``
in flight. Each request starts from a valid seed message of its method and is mutated, as raw bytes sent
through an identity serializer so that malformed protobuf reaches the server:

* field level: random fields set to edge values (extreme and negative numbers, NaN and infinities, empty,
  long, unicode and control-character strings, real and near-real ids, unknown enum numbers), repeated and
  map fields grown or cleared, nested messages mutated;
* byte level: bit flips, random bytes overwritten, inserted or deleted, truncation, duplicated slices,
  splicing two seeds, unknown fields, known field numbers with the wrong wire type, overlong varints,
  lengths past the end, deeply nested groups;
* huge (0.2 % of the requests): a repeated field repeated to 1 MB up to just under the RM's receive limit (4 MB).

Each request goes without credentials, with the right ones (the client secret, an AMRM token, the node
secret and the fuzzer's node session) or with wrong ones. Meanwhile a separate process acts as a
NodeManager: it registers (as an unhealthy node, so nothing is placed on it) and heartbeats every
``--probe-interval`` seconds, and reads the cluster metrics as often; their round trips give the heartbeat
p99 (target ≤ 1 s).

Counted: answers with ``UNKNOWN`` or ``INTERNAL`` (an exception the servicer did not handle), refusals whose
details do not start with a Java exception class, RM process deaths, and tracebacks in the RM's and the
NodeManagers' logs (all must be 0). Writes the ``grpc`` section of ``docs/results/fuzzing.md`` (and
``fuzzing.json`` beside it). Exit status 1 when anything was found.

    python bench/fuzz_grpc.py [--count 10000] [--concurrency 16] [--seed 1] [--only METHOD] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing as mp
import random
import re
import resource
import struct
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import grpc
from fuzz_report import PAGE, log_problems, percentile, table, write_section
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from common.hadoop.wire import encode_varint
from proto import shepherd_pb2 as pb
from rm.local import LocalCluster
from rm.service import limits

SERVICES = ("ResourceTracker", "ApplicationMaster", "ApplicationClient")  # what the RM serves (proto/serve.py)
NODE_SESSION = "x-shepherd-node-session"
MAX_MESSAGE = limits.MAX_MESSAGE - 64 * 1024  # under the RM's receive limit
UNHANDLED = {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL}
# statuses the gRPC library makes itself (transport, limits), whose details are not the servicer's
LIBRARY = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED,
           grpc.StatusCode.CANCELLED}
JAVA_CLASS = re.compile(r"^[a-z][a-z0-9_]*(\.[A-Za-z_$][A-Za-z0-9_$]*)+(: |$)")
MAX_SAMPLES = 4
HUGE_SHARE = 0.002  # of the requests: 1–4 MB each, so some 1 a second at the full run's rate


# ------------------------------------------------------------------------------------------- mutations

INT32 = (0, 1, -1, 2**31 - 1, -(2**31), 2**15, 10_000, 10_001, 255, 65_536)
INT64 = (0, 1, -1, 2**63 - 1, -(2**63), 2**31, 2**53 + 1, 1_700_000_000_000, 10**15)
FLOATS = (0.0, -0.0, 1.0, -1.0, math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, 3.4e38, 1e-45, 0.5, 1e12)
STRINGS = ("", " ", "0", "-1", "default", "root", "root.default", "root.nope", "a.b.c..d", "KILLED", "NaN",
           "application_1_0001", "application_0_0000", "appattempt_1_0001_000001", "container_1_0001_01_000001",
           "reservation_1_0001", "127.0.0.1:1", ":", "../../etc/passwd", "\x00", "\x00\x01\x7f", "\t\n\r",
           "ü∂ƒ©˙∆", "🐑" * 50, "%s%n%x", "{}", "{\"a\": [", "[]", "null", "true", "9" * 400, "-" * 70,
           "SUCCEEDED", "FILE", "ARCHIVE", "file:///", "http://x/", "ON_TRACK", "memory-mb", "vcores", "gpu")
SIZES = (1, 2, 10, 100, 1_000, 10_000)


def long_string(rng: random.Random) -> str:
    return rng.choice("ax🐑\x00") * rng.choice((257, 1025, 70_000, 300_000))


@dataclass
class Mutator:
    """Makes one mutated request from the seeds of a method; ``known`` strings are the cluster's real ids."""

    known: list[str]

    def value(self, f: FieldDescriptor, rng: random.Random, small: bool = False) -> Any:
        """An edge value for field ``f`` (``small``: no long strings, for fields filled many times)."""
        t = f.type
        if t in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SFIXED32):
            return rng.choice(INT32) if rng.random() < 0.7 else rng.randint(-(2**31), 2**31 - 1)
        if t in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_SFIXED64):
            return rng.choice(INT64) if rng.random() < 0.7 else rng.randint(-(2**63), 2**63 - 1)
        if t in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32):
            return rng.choice((0, 1, 2**32 - 1))
        if t in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
            return rng.choice((0, 1, 2**64 - 1))
        if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
            v = rng.choice(FLOATS) if rng.random() < 0.8 else rng.uniform(-1e6, 1e6)
            return v if t == FieldDescriptor.TYPE_DOUBLE or not math.isfinite(v) or abs(v) < 3e38 else math.inf
        if t == FieldDescriptor.TYPE_BOOL:
            return rng.random() < 0.5
        if t == FieldDescriptor.TYPE_ENUM:
            return rng.choice([v.number for v in f.enum_type.values] + [-1, 3, 99, 2**31 - 1])
        if t == FieldDescriptor.TYPE_BYTES:
            return rng.randbytes(rng.choice((0, 1, 16, 1000)))
        r = rng.random()
        if r < 0.3 and self.known:
            s = rng.choice(self.known)
            return s if rng.random() < 0.6 else s[: rng.randint(0, len(s))] + rng.choice(STRINGS)
        if r < 0.97 or small:
            return rng.choice(STRINGS)
        return long_string(rng)

    def mutate_field(self, msg: Message, rng: random.Random, depth: int = 0, small: bool = False) -> None:
        fields = msg.DESCRIPTOR.fields
        if not fields:
            return
        f = rng.choice(fields)
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            mapping = getattr(msg, f.name)
            key_f, value_f = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            if rng.random() < 0.2:
                mapping.clear()
            n = rng.choice((1, 1, 3, 200)) if not small else rng.choice((1, 3))  # inside a grown field: few
            small = small or n > 3
            for _ in range(n):
                key = self.value(key_f, rng, small)
                if value_f.message_type is not None:
                    self.mutate_field(mapping[key], rng, depth + 1, small)
                else:
                    mapping[key] = self.value(value_f, rng, small)
        elif f.is_repeated:
            items = getattr(msg, f.name)
            if rng.random() < 0.25:
                del items[:]
                return
            n = rng.choice(SIZES) if not small else rng.choice((1, 3))
            small = small or n > 3
            if f.message_type is not None:
                template = items[0] if len(items) else None
                if template is not None:  # at most some 4 MB of copies
                    n = min(n, max(1, 4 * 1024 * 1024 // max(1, template.ByteSize())))
                for _ in range(min(n, 2_000)):
                    item = items.add()
                    if template is not None and rng.random() < 0.7:
                        item.CopyFrom(template)
                    if depth < 3:
                        self.mutate_field(item, rng, depth + 1, small)
            else:
                one = self.value(f, rng, small)
                items.extend([one] * n if rng.random() < 0.5 else
                             [self.value(f, rng, small) for _ in range(min(n, 100))])
        elif f.message_type is not None:
            if rng.random() < 0.2:
                msg.ClearField(f.name)
            elif depth < 4:
                self.mutate_field(getattr(msg, f.name), rng, depth + 1, small)
        else:
            setattr(msg, f.name, self.value(f, rng, small))

    def field_level(self, seed: Message, rng: random.Random) -> bytes:
        msg = type(seed)()
        msg.CopyFrom(seed)
        for _ in range(rng.choice((1, 1, 2, 3, 6))):
            self.mutate_field(msg, rng)
            if msg.ByteSize() > MAX_MESSAGE // 2:  # the huge ones are made on purpose, below
                break
        return msg.SerializeToString()

    @staticmethod
    def byte_level(data: bytes, other: bytes, rng: random.Random) -> bytes:
        b = bytearray(data)
        op = rng.randrange(12)
        n = len(b)
        if op == 0 and n:  # flip bits
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(n)
                b[i] ^= 1 << rng.randrange(8)
        elif op == 1 and n:  # overwrite bytes
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(n)] = rng.choice((0x00, 0xFF, 0x7F, 0x80, rng.randrange(256)))
        elif op == 2:  # insert random bytes
            i = rng.randint(0, n)
            b[i:i] = rng.randbytes(rng.randint(1, 32))
        elif op == 3 and n:  # delete a range
            i = rng.randrange(n)
            del b[i: i + rng.randint(1, 16)]
        elif op == 4 and n:  # truncate
            del b[rng.randrange(n):]
        elif op == 5 and n:  # duplicate a slice
            i = rng.randrange(n)
            j = min(n, i + rng.randint(1, 64))
            b[j:j] = b[i:j] * rng.randint(1, 8)
        elif op == 6:  # splice with another seed
            i, j = rng.randint(0, n), rng.randint(0, len(other))
            b = b[:i] + bytearray(other[j:])
        elif op == 7:  # an unknown field of any wire type
            b += _unknown_field(rng)
        elif op == 8:  # a known field number with the wrong wire type
            number = rng.randint(1, 20)
            wire = rng.choice((0, 1, 2, 5))
            b += encode_varint(number << 3 | wire) + _payload(wire, rng)
        elif op == 9:  # an overlong varint, a length past the end, field number 0 or a bad wire type
            b += rng.choice((b"\x08" + b"\xff" * 11, b"\x0a\xff\xff\xff\xff\x0f", b"\x00\x01",
                             b"\x0e", b"\x0f", b"\x0a" + encode_varint(2**31) + b"x", b"\x08\x80"))
        elif op == 10:  # nested groups beyond the recursion limit, or an unterminated one
            depth = rng.choice((50, 101, 1_000, 100_000))
            b += b"\x0b" * depth + (b"\x0c" * depth if rng.random() < 0.5 else b"")
        else:  # a zero-length or all-garbage message
            b = bytearray(rng.choice((b"", rng.randbytes(rng.randint(1, 256)))))
        return bytes(b)

    @staticmethod
    def huge(seed: Message, rng: random.Random) -> bytes:
        """The seed with one repeated (or string) field filled to 1 MB up to just under the RM's receive limit."""
        repeated = [f for f in seed.DESCRIPTOR.fields if f.is_repeated]
        target = rng.choice((1024 * 1024, MAX_MESSAGE // 2, MAX_MESSAGE)) - 4096
        base = seed.SerializeToString()
        if repeated:
            f = rng.choice(repeated)
            probe = type(seed)()
            items = getattr(probe, f.name)
            src = getattr(seed, f.name)
            if f.message_type is not None and f.message_type.GetOptions().map_entry:
                key_f = f.message_type.fields_by_name["key"]
                value_f = f.message_type.fields_by_name["value"]
                if value_f.message_type is None and key_f.type == FieldDescriptor.TYPE_STRING:
                    items["k"] = 1 if value_f.type != FieldDescriptor.TYPE_STRING else "v"
            elif f.message_type is not None:
                item = items.add()
                if len(src):
                    item.CopyFrom(src[0])
            else:
                items.append(src[0] if len(src) else Mutator([]).value(f, rng))
            one = probe.SerializeToString() or b"\x00"
            return base + one * max(1, min((target - len(base)) // len(one), MAX_MESSAGE // len(one) - 1))
        strings = [f for f in seed.DESCRIPTOR.fields if f.type == FieldDescriptor.TYPE_STRING]
        if strings:
            f = rng.choice(strings)
            return base + encode_varint(f.number << 3 | 2) + encode_varint(target) + b"x" * target
        return base + _unknown_field(rng) * 1000

    def mutate(self, seeds: list[Message], encoded: list[bytes], rng: random.Random) -> tuple[str, bytes]:
        """(kind, bytes) of one mutated request."""
        i = rng.randrange(len(seeds))
        r = rng.random()
        if r < HUGE_SHARE:
            return "huge", self.huge(seeds[i], rng)
        if r < 0.45:
            return "field", self.field_level(seeds[i], rng)
        if r < 0.6:
            return "field+byte", self.byte_level(self.field_level(seeds[i], rng), rng.choice(encoded), rng)
        if r < 0.97:
            data = encoded[i]
            for _ in range(rng.choice((1, 1, 1, 2, 4))):
                data = self.byte_level(data, rng.choice(encoded), rng)
            return "byte", data
        return "seed", encoded[i]


def _payload(wire: int, rng: random.Random) -> bytes:
    if wire == 0:
        return encode_varint(rng.choice((0, 1, 2**63, 2**64 - 1, rng.getrandbits(64))))
    if wire == 1:
        return struct.pack("<d", rng.choice(FLOATS))
    if wire == 5:
        return struct.pack("<f", rng.choice((0.0, math.nan, math.inf)))
    data = rng.randbytes(rng.randint(0, 64))
    return encode_varint(len(data)) + data


def _unknown_field(rng: random.Random) -> bytes:
    number = rng.choice((21, 99, 1000, 19_000, 536_870_911))
    wire = rng.choice((0, 1, 2, 5))
    return encode_varint(number << 3 | wire) + _payload(wire, rng)


# ------------------------------------------------------------------------------------------- the cluster


@dataclass
class Scene:
    """What the seeds and the credentials name: the live cluster's secrets and real objects."""

    address: str
    client_secret: str
    node_secret: str
    node_id: pb.NodeId  # the fuzzer's own registered node
    node_session: str
    am_tokens: list[str]
    victim_app: str
    app_ids: list[str]
    attempt_ids: list[str]
    container_ids: list[str]
    real_node_ids: list[str]
    reservation_id: str
    fresh_app_ids: list[str] = field(default_factory=list)  # handed out, not yet submitted
    queue: str = "default"

    def known(self) -> list[str]:
        return [*self.app_ids, *self.attempt_ids, *self.container_ids, *self.real_node_ids, self.reservation_id,
                self.victim_app, self.queue]

    def metadata(self, method: str, identity: str, rng: random.Random) -> list[tuple[str, str]]:
        """The credentials of one request: ``none``, ``wrong`` ones, or the ``valid`` ones of its service (the
        last AM's token only for FinishApplicationMaster, so that the other AMs stay registered)."""
        service = method.split("/", 1)[0]
        if identity == "none":
            return []
        if identity == "wrong":
            return [("authorization", rng.choice(("Bearer wrong", "Bearer ", "Basic x", "bearer " +
                                                  self.client_secret[:-1], "Bearer " + "x" * 5000)))]
        if service == "ResourceTracker":
            return [("authorization", f"Bearer {self.node_secret}"), (NODE_SESSION, self.node_session)]
        if service == "ApplicationMaster":
            finish = method.endswith("/FinishApplicationMaster")
            token = self.am_tokens[-1] if finish else rng.choice(self.am_tokens[:-1] or self.am_tokens)
            return [("authorization", f"Bearer {token}")]
        return [("authorization", f"Bearer {self.client_secret}")]


def seeds(scene: Scene) -> dict[str, list[Message]]:
    """Valid requests of every method, by ``Service/Method``."""
    app = scene.victim_app
    job = json.dumps({"id": "fuzz-job", "stages": [{"name": "s0", "tasks": 2, "duration_s": 5, "memory_mb": 128,
                                                     "vcores": 1, "command": "true"}]})
    now_ms = int(time.time() * 1000)
    definition = json.dumps({"arrival": now_ms + 60_000, "deadline": now_ms + 3_660_000, "reservation-name": "f",
                             "reservation-requests": {"reservation-request-interpreter": 1, "reservation-request": [
                                 {"capability": {"memory": 128, "vCores": 1}, "num-containers": 1,
                                  "min-concurrency": 1, "duration": 60_000}]}})
    res = pb.Resource(values={"memory-mb": 128, "vcores": 1})
    status = pb.ContainerStatus(container_id=(scene.container_ids or ["container_1_0001_01_000001"])[0],
                                state=pb.CONTAINER_RUNNING, exit_status=0, diagnostics="", start_time_ms=now_ms)
    context = pb.ApplicationSubmissionContext(
        application_id=app, name="fuzz", queue="default", user="fuzz", application_type="YARN", priority=1,
        am_resource=res, am_container_spec=pb.ContainerLaunchContext(
            commands=["true"], environment={"A": "b"},
            local_resources={"f": pb.LocalResource(url="file:///dev/null", type="FILE")}),
        max_app_attempts=1, tags=["fuzz"], unmanaged_am=True, inputs=["/in"], outputs=["/out"])
    timed = []  # new apps with a job file and a deadline: their submissions reach admission and the deadline book
    for app_id in scene.fresh_app_ids:
        one = pb.ApplicationSubmissionContext()
        one.CopyFrom(context)
        one.application_id, one.job_spec_json, one.deadline, one.max_price = app_id, job, time.time() + 7200, 1e6
        timed.append(pb.SubmitApplicationRequest(context=one))
    ask = pb.ResourceAsk(allocation_request_id=1, priority=1, capability=res, num_containers=1, nodes=["*"],
                         racks=["/default-rack"], relax_locality=True, ask_type=pb.ALTRUISTIC,
                         remaining_work_s=10.0, stage="s0")
    return {
        "ResourceTracker/RegisterNodeManager": [pb.RegisterNodeRequest(
            node_id=scene.node_id, http_address="127.0.0.1:1", rack="/default-rack",
            capability=pb.Resource(values={"memory-mb": 64, "vcores": 1}), container_statuses=[status],
            version="fuzz", ipc_port=0)],
        "ResourceTracker/NodeHeartbeat": [pb.NodeHeartbeatRequest(
            node_id=scene.node_id, response_id=1, container_statuses=[status],
            health=pb.NodeHealth(healthy=False, health_report="fuzz", last_health_report_time_ms=now_ms),
            used=res)],
        "ResourceTracker/UnregisterNodeManager": [pb.UnregisterNodeRequest(node_id=scene.node_id)],
        "ApplicationMaster/RegisterApplicationMaster": [pb.RegisterApplicationMasterRequest(
            host="127.0.0.1", rpc_port=1, tracking_url="http://127.0.0.1:1/")],
        "ApplicationMaster/Allocate": [
            pb.AllocateRequest(response_id=0, asks=[ask], releases=scene.container_ids[:1], progress=0.5,
                               blacklist_additions=["127.0.0.1:1"], blacklist_removals=["127.0.0.1:1"],
                               size=pb.SizeReport(remaining_s=10, total_s=20), guarantee=res, checkpoint="{}",
                               control=[pb.ControlStep(age_s=1, progress=0.5, raw_units=1, smoothed_units=1.0,
                                                       requested_units=1, finish_in_s=10, status="ON_TRACK")]),
            pb.AllocateRequest(response_id=1, progress=0.1)],
        "ApplicationMaster/FinishApplicationMaster": [pb.FinishApplicationMasterRequest(
            final_status=pb.SUCCEEDED, diagnostics="fuzz", tracking_url="http://127.0.0.1:1/")],
        "ApplicationClient/GetNewApplication": [pb.GetNewApplicationRequest()],
        "ApplicationClient/SubmitApplication": [pb.SubmitApplicationRequest(context=context), *timed],
        "ApplicationClient/GetApplicationReport": [pb.GetApplicationReportRequest(application_id=app,
                                                                                  rest_shape=True)],
        "ApplicationClient/GetApplications": [pb.GetApplicationsRequest(states=["RUNNING", "ACCEPTED"],
                                                                        queue="default", user="fuzz", limit=5,
                                                                        rest_shape=True)],
        "ApplicationClient/GetApplicationAttempts": [pb.GetApplicationAttemptsRequest(application_id=app)],
        "ApplicationClient/GetContainers": [pb.GetContainersRequest(application_id=scene.app_ids[0])],
        "ApplicationClient/KillApplication": [pb.KillApplicationRequest(application_id=app, diagnostics="fuzz",
                                                                        user="fuzz")],
        "ApplicationClient/GetClusterMetrics": [pb.GetClusterMetricsRequest()],
        "ApplicationClient/GetClusterNodes": [pb.GetClusterNodesRequest(states=["RUNNING"])],
        "ApplicationClient/GetQueueInfo": [pb.GetQueueInfoRequest(queue="default"), pb.GetQueueInfoRequest()],
        "ApplicationClient/QuoteDeadline": [pb.QuoteDeadlineRequest(queue="default", user="fuzz",
                                                                    job_spec_json=job, name="fuzz-job",
                                                                    application_type="SHEPHERD", tags=["x"])],
        "ApplicationClient/MoveApplication": [pb.MoveApplicationRequest(application_id=app, queue="default",
                                                                        user="fuzz")],
        "ApplicationClient/UpdateApplicationPriority": [pb.UpdateApplicationPriorityRequest(
            application_id=app, priority=3, user="fuzz")],
        "ApplicationClient/NewReservation": [pb.NewReservationRequest(user="fuzz")],
        "ApplicationClient/SubmitReservation": [pb.SubmitReservationRequest(
            reservation_id=scene.reservation_id, queue="default", definition_json=definition, user="fuzz")],
        "ApplicationClient/DeleteReservation": [pb.DeleteReservationRequest(reservation_id=scene.reservation_id,
                                                                            user="fuzz")],
        "ApplicationClient/RefreshQueues": [pb.RefreshQueuesRequest(dry_run=True, user="fuzz")],
    }


def methods() -> list[tuple[str, str, Any]]:
    """(service, method, request class) of every method the RM serves."""
    out = []
    for name in SERVICES:
        for m in pb.DESCRIPTOR.services_by_name[name].methods:
            out.append((name, m.name, getattr(pb, m.input_type.name)))
    return out


def generic_seed(cls: Any, scene: Scene) -> Message:
    """A method without a hand-made seed (a new one) starts from a message with every field set once."""
    msg = cls()
    mutator = Mutator(scene.known())
    rng = random.Random(0)
    for f in msg.DESCRIPTOR.fields:
        if f.message_type is None and not f.is_repeated:
            setattr(msg, f.name, mutator.value(f, rng))
    return msg


async def _register(stub: Any, secret: str, node: pb.NodeId, *, healthy: bool, memory_mb: int) -> str:
    call = stub.RegisterNodeManager(pb.RegisterNodeRequest(
        node_id=node, http_address="127.0.0.1:1", capability=pb.Resource(values={"memory-mb": memory_mb,
                                                                                  "vcores": 1})),
        metadata=[("authorization", f"Bearer {secret}")])
    await call
    session = next((v for k, v in await call.trailing_metadata() if k == NODE_SESSION), "")
    await stub.NodeHeartbeat(pb.NodeHeartbeatRequest(node_id=node, health=pb.NodeHealth(healthy=healthy)),
                             metadata=[("authorization", f"Bearer {secret}"), (NODE_SESSION, session)])
    return session


def _wait(pred: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.2)
    raise RuntimeError(f"timed out waiting for {what}")


async def build_scene(c: LocalCluster, work: Path, am_apps: int = 2, fresh_ids: int = 300) -> Scene:
    """Submit the apps, read their AMRM tokens back from their AM containers, register an AM and a node."""
    from proto import shepherd_pb2_grpc as pbg

    client_md = [("authorization", f"Bearer {c.client_secret}")]
    tokens_dir = work / "am-tokens"
    tokens_dir.mkdir(parents=True, exist_ok=True)
    async with grpc.aio.insecure_channel(c.rm_address) as channel:
        ac = pbg.ApplicationClientStub(channel)
        app_ids = []
        for i in range(am_apps + 1):
            app_id = (await ac.GetNewApplication(pb.GetNewApplicationRequest(), metadata=client_md)).application_id
            token_file = tokens_dir / app_id
            command = f'printf %s "$SHEPHERD_AMRM_TOKEN" > {token_file}.tmp && mv {token_file}.tmp {token_file}' \
                      " && exec sleep 7200"
            ctx = pb.ApplicationSubmissionContext(
                application_id=app_id, name=f"fuzz-seed-{i}", queue="default", application_type="YARN",
                am_resource=pb.Resource(values={"memory-mb": 128, "vcores": 1}),
                am_container_spec=pb.ContainerLaunchContext(commands=[command]), max_app_attempts=1)
            await ac.SubmitApplication(pb.SubmitApplicationRequest(context=ctx), metadata=client_md)
            app_ids.append(app_id)
        victim = app_ids.pop()  # the client calls' app (killed, moved, ...); the others' AMs are fuzzed
        token_files = [tokens_dir / a for a in app_ids]
        await asyncio.to_thread(_wait, lambda: all(f.exists() for f in token_files), 120, "the AM tokens")
        tokens = [f.read_text().strip() for f in token_files]
        am = pbg.ApplicationMasterStub(channel)
        await am.RegisterApplicationMaster(pb.RegisterApplicationMasterRequest(host="127.0.0.1", rpc_port=1),
                                           metadata=[("authorization", f"Bearer {tokens[0]}")])
        attempts, containers = [], []
        for app_id in app_ids:
            att = await ac.GetApplicationAttempts(pb.GetApplicationAttemptsRequest(application_id=app_id),
                                                  metadata=client_md)  # as the owner: others may not see them
            attempts += [a.attempt_id for a in att.attempts]
            containers += [a.am_container_id for a in att.attempts if a.am_container_id]
        rid = (await ac.NewReservation(pb.NewReservationRequest(), metadata=client_md)).reservation_id
        fresh = [(await ac.GetNewApplication(pb.GetNewApplicationRequest(), metadata=client_md)).application_id
                 for _ in range(fresh_ids)]
        node = pb.NodeId(host="127.0.0.1", port=_closed_port())
        session = await _register(pbg.ResourceTrackerStub(channel), c.node_secret, node, healthy=False,
                                  memory_mb=64)
    return Scene(address=c.rm_address, client_secret=c.client_secret, node_secret=c.node_secret, node_id=node,
                 node_session=session, am_tokens=tokens, victim_app=victim, app_ids=app_ids, attempt_ids=attempts,
                 fresh_app_ids=fresh,
                 container_ids=containers, real_node_ids=list(c.node_ids), reservation_id=rid)


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ------------------------------------------------------------------------------------------- the probe


def probe_main(address: str, node_secret: str, interval: float, stop: Any, out: Any) -> None:
    """A NodeManager-like heartbeat loop and a cheap read, each every ``interval`` s, in a process of its
    own (so that the fuzzer's own CPU use does not count as the RM's latency). Puts its samples on ``out``."""
    asyncio.run(_probe(address, node_secret, interval, stop, out))


async def _probe(address: str, node_secret: str, interval: float, stop: Any, out: Any) -> None:
    from proto import shepherd_pb2_grpc as pbg

    heartbeats: list[float] = []
    reads: list[float] = []
    failures: Counter[str] = Counter()
    resyncs = 0
    async with grpc.aio.insecure_channel(address) as channel:
        rt, ac = pbg.ResourceTrackerStub(channel), pbg.ApplicationClientStub(channel)
        node = pb.NodeId(host="127.0.0.1", port=_closed_port())
        session = await _register(rt, node_secret, node, healthy=False, memory_mb=64)
        response_id = 0
        next_at = time.monotonic()
        while not stop.is_set():
            t0 = time.monotonic()
            try:
                res = await rt.NodeHeartbeat(
                    pb.NodeHeartbeatRequest(node_id=node, response_id=response_id,
                                            health=pb.NodeHealth(healthy=False, health_report="probe")),
                    metadata=[("authorization", f"Bearer {node_secret}"), (NODE_SESSION, session)], timeout=30)
                heartbeats.append(time.monotonic() - t0)
                response_id = res.response_id
                if res.action == pb.NODE_ACTION_RESYNC:
                    resyncs += 1
                    session = await _register(rt, node_secret, node, healthy=False, memory_mb=64)
                    response_id = 0
            except grpc.aio.AioRpcError as exc:
                failures[f"heartbeat {exc.code().name}"] += 1
                heartbeats.append(time.monotonic() - t0)
            t1 = time.monotonic()
            try:
                await ac.GetClusterMetrics(pb.GetClusterMetricsRequest(), timeout=30)
                reads.append(time.monotonic() - t1)
            except grpc.aio.AioRpcError as exc:
                failures[f"read {exc.code().name}"] += 1
                reads.append(time.monotonic() - t1)
            next_at += interval
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
    out.put({"heartbeats": heartbeats, "reads": reads, "failures": dict(failures), "resyncs": resyncs})


# ------------------------------------------------------------------------------------------- the fuzz


@dataclass
class MethodStats:
    name: str
    sent: int = 0
    by_identity: Counter[str] = field(default_factory=Counter)
    by_kind: Counter[str] = field(default_factory=Counter)
    codes: Counter[str] = field(default_factory=Counter)
    unhandled: int = 0  # UNKNOWN or INTERNAL
    unnamed: int = 0  # a refusal whose details do not start with a Java exception class
    slowest_s: float = 0.0
    samples: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if len(self.samples) < MAX_SAMPLES and text not in self.samples:
            self.samples.append(text)

    def row(self) -> dict[str, Any]:
        return {"method": self.name, "sent": self.sent, "identities": dict(self.by_identity),
                "kinds": dict(self.by_kind), "codes": dict(self.codes.most_common()), "unhandled": self.unhandled,
                "unnamed": self.unnamed, "slowest_s": round(self.slowest_s, 3), "samples": self.samples}


def _schedule(names: list[str], count: int) -> Iterator[tuple[int, int]]:
    """(method index, sequence number), round robin over the methods, ``count`` of each."""
    for seq in range(count):
        for i in range(len(names)):
            yield i, seq


async def fuzz(scene: Scene, count: int, concurrency: int, seed: int, only: str = "",
               alive: Callable[[], bool] = lambda: True, progress: Callable[[str], None] | None = None
               ) -> tuple[list[MethodStats], float, bool, list[tuple[float, str, str, str, int, int]]]:
    """Send ``count`` mutated requests to every method; (stats, seconds, RM alive all along, the slow ones)."""
    table_ = [(s, m, cls) for s, m, cls in methods() if only in f"{s}/{m}"]
    names = [f"{s}/{m}" for s, m, _ in table_]
    made = seeds(scene)
    seed_msgs = [made.get(n) or [generic_seed(cls, scene)] for n, (_, _, cls) in zip(names, table_, strict=True)]
    encoded = [[m.SerializeToString() for m in ms] for ms in seed_msgs]
    stats = [MethodStats(n) for n in names]
    mutator = Mutator(scene.known())
    options = [("grpc.max_send_message_length", 64 * 1024 * 1024),
               ("grpc.max_receive_message_length", 64 * 1024 * 1024)]
    started = time.monotonic()
    rm_alive = True
    work = _schedule(names, count)
    total = count * len(names)
    done = 0
    slow: list[tuple[float, str, str, str, int, int]] = []  # the requests that took over 0.5 s
    async with grpc.aio.insecure_channel(scene.address, options=options) as channel:
        calls = [channel.unary_unary(f"/shepherd.v1.{n}", request_serializer=None, response_deserializer=None)
                 for n in names]

        async def worker(w: int) -> None:
            nonlocal done, rm_alive
            for i, seq in work:
                rng = random.Random(f"{seed}/{names[i]}/{seq}")
                identity = rng.choices(("valid", "none", "wrong"), (0.6, 0.2, 0.2))[0]
                kind, data = mutator.mutate(seed_msgs[i], encoded[i], rng)
                s = stats[i]
                s.sent += 1
                s.by_identity[identity] += 1
                s.by_kind[kind] += 1
                t0 = time.monotonic()
                try:
                    await calls[i](data, metadata=scene.metadata(names[i], identity, rng), timeout=60)
                    s.codes["OK"] += 1
                except grpc.aio.AioRpcError as exc:
                    code, details = exc.code(), exc.details() or ""
                    s.codes[code.name] += 1
                    if code in UNHANDLED:
                        s.unhandled += 1
                        s.note(f"{code.name} ({kind}, {identity}, seq {seq}): {details[:300]}")
                    elif code not in LIBRARY and not JAVA_CLASS.match(details):
                        s.unnamed += 1
                        s.note(f"unnamed {code.name} ({kind}, {identity}, seq {seq}): {details[:300]}")
                    elif code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                        s.note(f"{code.name} ({kind}, {identity}, seq {seq}, {len(data)} bytes): {details[:200]}")
                    elif code == grpc.StatusCode.UNAVAILABLE and not alive():
                        rm_alive = False
                        s.note(f"RM down ({kind}, {identity}, seq {seq}): {details[:300]}")
                        return
                took = time.monotonic() - t0
                s.slowest_s = max(s.slowest_s, took)
                if took > 0.5:
                    slow.append((round(took, 3), names[i], kind, identity, seq, len(data)))
                done += 1
                if progress is not None and done % 5000 == 0:
                    rate = done / (time.monotonic() - started)
                    progress(f"{done}/{total} requests, {rate:.0f}/s, unhandled "
                             f"{sum(x.unhandled for x in stats)}, unnamed {sum(x.unnamed for x in stats)}")

        await asyncio.gather(*(worker(w) for w in range(concurrency)))
    slow.sort(reverse=True)
    return stats, time.monotonic() - started, rm_alive and alive(), slow


@contextmanager
def cluster(work: Path, nodes: int) -> Iterator[LocalCluster]:
    c = LocalCluster(work / "cluster", allow_root_containers=True,
                     nodes=nodes, grpc_port=0, rest_port=0, ipc_client_port=0,
                     ipc_scheduler_port=0, node_memory_mb=2048, node_vcores=4)
    c.start()
    try:
        yield c
    finally:
        c.stop()


def run_fuzz(c: LocalCluster, work: Path, count: int, concurrency: int, seed: int, only: str = "",
             probe_interval: float = 0.25, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Fuzz the running cluster ``c`` with the heartbeat probe running; the totals and rows."""
    scene = asyncio.run(build_scene(c, work))
    ctx = mp.get_context("spawn")
    stop, out = ctx.Event(), ctx.Queue()
    probe = ctx.Process(target=probe_main, args=(c.rm_address, c.node_secret, probe_interval, stop, out),
                        daemon=True)
    probe.start()
    try:
        stats, seconds, rm_alive, slow = asyncio.run(fuzz(scene, count, concurrency, seed, only, c.alive, progress))
    finally:
        stop.set()
        samples = out.get(timeout=120)
        probe.join(30)
    logs = {p.name: log_problems(p.read_text(errors="replace")) for p in sorted((c.data_dir / "logs").glob("*.log"))}
    hb, reads = samples["heartbeats"], samples["reads"]
    return {
        "methods": len(stats),
        "count_per_method": count,
        "concurrency": concurrency,
        "requests": sum(s.sent for s in stats),
        "min_sent": min((s.sent for s in stats), default=0),
        "unhandled": sum(s.unhandled for s in stats),
        "unnamed": sum(s.unnamed for s in stats),
        "codes": dict(sum((s.codes for s in stats), Counter()).most_common()),
        "rm_alive": rm_alive,
        "log_problems": {k: v[:10] for k, v in logs.items()},
        "log_problem_count": sum(len(v) for v in logs.values()),
        "seconds": round(seconds, 1),
        "rate_per_s": round(sum(s.sent for s in stats) / max(seconds, 1e-9), 1),
        "heartbeat": {"samples": len(hb), "p50_s": round(percentile(hb, 0.5), 4),
                      "p99_s": round(percentile(hb, 0.99), 4), "max_s": round(max(hb, default=0.0), 4),
                      "interval_s": probe_interval, "resyncs": samples["resyncs"]},
        "read": {"samples": len(reads), "p50_s": round(percentile(reads, 0.5), 4),
                 "p99_s": round(percentile(reads, 0.99), 4), "max_s": round(max(reads, default=0.0), 4)},
        "probe_failures": samples["failures"],
        "slow_requests": len(slow),
        "slowest": [dict(zip(("seconds", "method", "mutation", "identity", "seq", "bytes"), x, strict=True))
                    for x in slow[:15]],
        "grpc": grpc.__version__,
        "rows": [s.row() for s in stats],
    }


def passed(result: dict[str, Any]) -> bool:
    return (result["unhandled"] == 0 and result["unnamed"] == 0 and result["rm_alive"]
            and result["log_problem_count"] == 0 and result["min_sent"] >= result["count_per_method"]
            and result["heartbeat"]["p99_s"] <= 1.0)


def _codes(codes: dict[str, int]) -> str:
    return " ".join(f"{k}×{v}" for k, v in codes.items())


def _slowest(slow: list[dict[str, Any]]) -> str:
    if not slow:
        return "none."
    huge = [x for x in slow if x["mutation"] == "huge"]
    top = slow[0]
    text = (f"the slowest took {top['seconds']} s ({top['method']}, {top['mutation']}, {top['bytes']} bytes). ")
    if huge:
        text += (f"{len(huge)} of the {len(slow)} slowest carried 1–4 MB themselves: the RM parses and checks "
                 "every message on its one event loop, so the calls in flight beside a huge one wait for it.")
    return text


def render_section(result: dict[str, Any], command: str) -> str:
    rows = [[f"`{r['method']}`", r["sent"], _codes(r["codes"]), r["unhandled"], r["unnamed"], r["slowest_s"]]
            for r in result["rows"]]
    hb, rd = result["heartbeat"], result["read"]
    verdict = "**passed**" if passed(result) else "**FAILED**"
    kinds = Counter[str]()
    for r in result["rows"]:
        kinds.update(r["kinds"])
    lines = [
        "## gRPC: mutated protobuf against a live cluster",
        "",
        (f"Produced by `{command}` (grpcio {result['grpc']}, {result['seconds']} s on this 2-core machine, "
         f"{result['rate_per_s']} requests/s with {result['concurrency']} in flight)."),
        "",
        (f"* {result['methods']} methods (every method of ResourceTracker, ApplicationMaster and "
         f"ApplicationClient), ≥ {result['count_per_method']} mutated requests each: {result['requests']} in "
         f"all; by mutation: {_codes(dict(kinds.most_common()))}; identities: 60 % with the right credentials, "
         "20 % none, 20 % wrong."),
        f"* Answers by status: {_codes(result['codes'])}.",
        (f"* `UNKNOWN`/`INTERNAL` (unhandled exceptions): **{result['unhandled']}**; refusals whose details do "
         f"not start with a Java exception class: **{result['unnamed']}**."),
        (f"* RM process alive throughout: **{result['rm_alive']}**; tracebacks in the daemons' logs: "
         f"**{result['log_problem_count']}**."),
        (f"* Heartbeat round trip of a NodeManager-like client (every {hb['interval_s']} s, its own process): "
         f"p50 {hb['p50_s'] * 1000:.1f} ms, **p99 {hb['p99_s'] * 1000:.1f} ms**, max {hb['max_s'] * 1000:.1f} ms "
         f"over {hb['samples']} heartbeats (target p99 ≤ 1 s); a cheap read (`GetClusterMetrics`) as often: "
         f"p50 {rd['p50_s'] * 1000:.1f} ms, p99 {rd['p99_s'] * 1000:.1f} ms, max {rd['max_s'] * 1000:.1f} ms. "
         f"Probe failures: {result['probe_failures'] or 'none'}."),
        (f"* Requests answered after more than 0.5 s: {result['slow_requests']} of {result['requests']}; "
         f"{_slowest(result['slowest'])}"),
        f"* Verdict: {verdict}.",
        "",
        *table(["method", "sent", "answers", "UNKNOWN/INTERNAL", "unnamed", "slowest (s)"], rows),
        "",
    ]
    samples = [f"{r['method']}: {s}" for r in result["rows"] for s in r["samples"]]
    if samples:
        lines += ["What was found (first few per method):", ""] + [f"* `{s}`" for s in samples[:40]] + [""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=10_000, help="mutated requests per method")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--nodes", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--probe-interval", type=float, default=0.25)
    ap.add_argument("--only", default="", help="fuzz only the methods whose Service/Method contains this")
    ap.add_argument("--out", type=Path, default=PAGE)
    ap.add_argument("--no-write", action="store_true", help="print, do not write the results page")
    ap.add_argument("--keep", type=Path, help="run in this directory and keep it (the daemons' logs)")
    args = ap.parse_args()
    # a mutation gone wrong fails with MemoryError here rather than waking the machine's OOM killer
    resource.setrlimit(resource.RLIMIT_AS, (8 * 1024**3, resource.getrlimit(resource.RLIMIT_AS)[1]))
    with tempfile.TemporaryDirectory(prefix="shepherd-fuzz-grpc-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        with cluster(work, args.nodes) as c:
            result = run_fuzz(c, work, args.count, args.concurrency, args.seed, args.only, args.probe_interval,
                              lambda line: print(line, flush=True))
    for r in result["rows"]:
        print(f"{r['method']:48} {r['sent']:6} unhandled={r['unhandled']} unnamed={r['unnamed']} "
              f"slowest={r['slowest_s']}s {_codes(r['codes'])}")
        for s in r["samples"]:
            print(f"    {s}")
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}))
    if not args.no_write:
        command = "python bench/fuzz_grpc.py " + " ".join(a for a in sys.argv[1:] if a != "--no-write")
        write_section("grpc", render_section(result, command.strip()), result, args.out)
        print(f"wrote {args.out}")
    sys.exit(0 if passed(result) else 1)


if __name__ == "__main__":
    main()
