"""Daemons configured only by HADOOP_CONF_DIR (yarn-site.xml, capacity-scheduler.xml, resource-types.xml,
node-resources.xml), and the ``shepherd config`` commands over the same files."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from common import credentials
from proto import shepherd_pb2 as pb
from rm.client import ClientError, RMClient
from rm.local import Daemon
from tests.e2e.conftest import kill_strays, wait_until

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_site(path: Path, props: dict[str, str]) -> None:
    body = "\n".join(f"  <property><name>{k}</name><value>{v}</value></property>" for k, v in props.items())
    path.write_text(f'<?xml version="1.0"?>\n<configuration>\n{body}\n</configuration>\n')


def hadoop_conf(conf: Path, work: Path, *, dev_capacity: int = 30) -> dict[str, int]:
    ports = {name: _free_port() for name in ("web", "grpc", "ipc_client", "ipc_scheduler", "ipc_admin")}
    conf.mkdir(parents=True, exist_ok=True)
    write_site(conf / "yarn-site.xml", {
        "yarn.resourcemanager.hostname": "127.0.0.1",
        # literal: yarn-api-client reads this one without ${...} substitution
        "yarn.resourcemanager.webapp.address": f"127.0.0.1:{ports['web']}",
        "shepherd.resourcemanager.grpc.address": f"${{yarn.resourcemanager.hostname}}:{ports['grpc']}",
        "yarn.resourcemanager.address": f"${{yarn.resourcemanager.hostname}}:{ports['ipc_client']}",
        "yarn.resourcemanager.scheduler.address": f"${{yarn.resourcemanager.hostname}}:{ports['ipc_scheduler']}",
        "yarn.resourcemanager.admin.address": f"${{yarn.resourcemanager.hostname}}:{ports['ipc_admin']}",
        "shepherd.resourcemanager.data-dir": str(work / "rm"),
        "yarn.resourcemanager.am.max-attempts": "3",
        "yarn.nodemanager.resource.memory-mb": "3072",
        "yarn.nodemanager.resource.cpu-vcores": "3",
        "shepherd.nodemanager.grpc.address": "127.0.0.1:0",
        "yarn.nodemanager.webapp.address": "127.0.0.1:0",
        "yarn.nodemanager.local-dirs": str(work / "nm-local"),
        # the work dir is in pytest's private tmp dir: as root, containers may stay root here
        "shepherd.nodemanager.allow-root-containers": "true",
    })
    write_site(conf / "capacity-scheduler.xml", {
        "yarn.scheduler.capacity.root.queues": "prod,dev",
        "yarn.scheduler.capacity.root.prod.capacity": "70",
        "yarn.scheduler.capacity.root.dev.capacity": str(dev_capacity),
        "yarn.scheduler.capacity.root.dev.maximum-capacity": "40",
    })
    return ports


def _env(conf: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SHEPHERD_", "YARN_CONF_DIR")) or k == "SHEPHERD_HOME"}  # the tests' own index
    env["HADOOP_CONF_DIR"] = str(conf)
    return env


def shepherd(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rm.cli", *args], capture_output=True, text=True, timeout=60,
                          check=False, env=env)


def test_daemons_started_with_only_hadoop_conf_dir(tmp_path: Path) -> None:
    conf, work = tmp_path / "conf", tmp_path / "work"
    ports = hadoop_conf(conf, work)
    env = _env(conf)
    rm = Daemon("rm", [sys.executable, "-m", "rm.cli", "rm", "--create-store"], tmp_path / "rm.log",
                re.compile(r"resourcemanager ready grpc=(\S+) rest=(\S+)"), env=env)
    nm = Daemon("nm", [sys.executable, "-m", "rm.cli", "nm"], tmp_path / "nm.log",
                re.compile(r"nodemanager ready node_id=(\S+) http=(\S+)"), env=env)
    try:
        ready = rm.start()
        web = f"http://127.0.0.1:{ports['web']}"
        assert ready.group(2) == web
        assert ready.group(1) == f"127.0.0.1:{ports['grpc']}"
        root = httpx.get(f"{web}/ws/v1/cluster/scheduler").json()["scheduler"]["schedulerInfo"]
        queues = {q["queueName"]: q for q in root["queues"]["queue"]}
        assert set(queues) == {"prod", "dev"}
        assert (queues["prod"]["capacity"], queues["prod"]["maxCapacity"]) == (70, 100)
        assert (queues["dev"]["capacity"], queues["dev"]["maxCapacity"]) == (30, 40)
        assert queues["dev"]["capacities"]["queueCapacitiesByPartition"][0]["maxAMLimitPercentage"] == 10
        assert (work / "rm" / "rm-state.db").exists()

        nm.start()
        node = wait_until(lambda: httpx.get(f"{web}/ws/v1/cluster/nodes").json()["nodes"]["node"], 30,
                          "the NodeManager to register")[0]
        assert node["totalResource"] == {"memory": 3072, "vCores": 3}
        assert (work / "nm-local" / "containers").is_dir()

        # yarn-api-client finds the RM through the same yarn-site.xml
        probe = subprocess.run(
            [sys.executable, "-c", ("from yarn_api_client import ResourceManager as R; "
             "print(R().cluster_information().data['clusterInfo']['haState'])")],
            capture_output=True, text=True, timeout=60, check=False, env=env)
        assert probe.stdout.strip() == "ACTIVE", probe.stderr
    finally:
        nm.stop()
        rm.stop()
        kill_strays(tmp_path)


def test_config_validate_and_show_sources(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    ports = hadoop_conf(conf, tmp_path / "work")
    env = _env(conf)
    ok = shepherd("config", "validate", env=env)
    assert ok.returncode == 0, ok.stderr
    assert "root.dev" in ok.stdout
    assert "root.prod" in ok.stdout
    shown = shepherd("config", "show", "--sources", "-o", "json", env={**env, "SHEPHERD_DATA_DIR": "/srv/x"})
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    web = data["yarn.resourcemanager.webapp.address"]
    assert web == {"value": f"127.0.0.1:{ports['web']}", "source": str(conf / "yarn-site.xml")}
    assert data["shepherd.resourcemanager.data-dir"] == {"value": "/srv/x", "source": "env SHEPHERD_DATA_DIR"}
    assert data["yarn.cluster.max-application-priority"]["source"] == "default"
    assert data["queues (children of root)"]["source"] == str(conf / "capacity-scheduler.xml")
    nm = json.loads(shepherd("config", "show", "--nm", "-o", "json", env=env).stdout)
    assert nm["yarn.nodemanager.resource.memory-mb"] == "3072"
    table = shepherd("config", "show", "--sources", env=env)
    assert "yarn-site.xml" in table.stdout

    broken = tmp_path / "broken"
    hadoop_conf(broken, tmp_path / "work2", dev_capacity=40)  # 70 + 40 = 110
    bad = shepherd("config", "validate", env=_env(broken))
    assert bad.returncode == 2
    assert "children of root add up to 110" in bad.stderr
    rm = shepherd("rm", env=_env(broken))
    assert rm.returncode == 2
    assert "110" in rm.stderr


def test_resource_types_and_node_resources_reach_the_node_and_bound_asks(tmp_path: Path) -> None:
    conf, work = tmp_path / "conf", tmp_path / "work"
    ports = hadoop_conf(conf, work)
    write_site(conf / "resource-types.xml", {
        "yarn.resource-types": "yarn.io/gpu",
        "yarn.resource-types.yarn.io/gpu.maximum-allocation": "2",
    })
    write_site(conf / "node-resources.xml", {"yarn.nodemanager.resource-type.yarn.io/gpu": "4"})
    env = _env(conf)
    shown = json.loads(shepherd("config", "show", "--nm", "--sources", "-o", "json", env=env).stdout)
    assert shown["extra resources"] == {"value": "gpu=4", "source": str(conf / "node-resources.xml")}
    rm = Daemon("rm", [sys.executable, "-m", "rm.cli", "rm", "--create-store"], tmp_path / "rm.log",
                re.compile(r"resourcemanager ready grpc=(\S+) rest=(\S+)"), env=env)
    nm = Daemon("nm", [sys.executable, "-m", "rm.cli", "nm"], tmp_path / "nm.log",
                re.compile(r"nodemanager ready node_id=(\S+) http=(\S+)"), env=env)
    try:
        rm.start()
        nm.start()
        secret = credentials.load(work / "rm" / "credentials.json").client_secret
        with RMClient(f"127.0.0.1:{ports['grpc']}", secret) as client:
            node = wait_until(client.nodes, 30, "the NodeManager to register")[0]
            assert dict(node.capability.values) == {"memory-mb": 3072, "vcores": 3, "gpu": 4}

            def submit(**extra: int) -> str:
                app_id = client.new_application()
                client.submit(pb.ApplicationSubmissionContext(
                    application_id=app_id, queue="prod",
                    am_resource=pb.Resource(values={"memory-mb": 256, "vcores": 1, **extra}),
                    am_container_spec=pb.ContainerLaunchContext(commands=["sleep 30"])))
                return app_id

            with pytest.raises(ClientError) as err:  # a type resource-types.xml does not declare
                submit(fpga=1)
            assert "InvalidResourceRequestException" in err.value.message
            assert "unknown resource types ['fpga']" in err.value.message
            with pytest.raises(ClientError) as err:  # the node has 4, the type's maximum-allocation is 2
                submit(gpu=3)
            assert "InvalidResourceRequestException" in err.value.message
            assert "exceeds the maximum allocation" in err.value.message
            assert "gpu=2" in err.value.message
            assert client.apps() == []
            accepted = submit(gpu=2)
            assert client.app(accepted).state in ("ACCEPTED", "RUNNING")
            client.kill(accepted)
    finally:
        nm.stop()
        rm.stop()
        kill_strays(tmp_path)
