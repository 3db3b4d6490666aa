"""SLearn live with stock Hadoop clients, on the `slearn` scheduler (3 NodeManagers, 12 vcores).

A MapReduce-style application submitted and run by Hadoop's own Java clients over Hadoop IPC (YarnClient and
AMRMClient, `java/MapReduceStyleAm.java`; type MAPREDUCE, no job file, 60 maps asked at one priority) is
sampled: while a greedy job keeps the cluster full it is gated to k = ⌈3 % × 60⌉ = 2 pilots and granted no
more. A Spark application (long-lived executors say nothing of a job's size) is never gated."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from rm.client import RMClient
from tests.e2e.conftest import wait_until
from tests.e2e.test_slearn_live import fill_with_greedy, slearn_cluster
from tests.e2e.test_yarn_clients import (
    JAVA,
    PYSPARK,
    SPARK_TIMEOUT_S,
    TOKEN_FILES,
    app_of,
    hadoop_conf,
    java_home,
    pyspark_home,
    spark_args,
    spark_env,
)

JAVAC = shutil.which("javac")  # the single-file source launcher compiles with the JDK's compiler
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(JAVA is None or JAVAC is None or PYSPARK is None,
                       reason="needs a Java 17+ JDK and the pyspark package"),
]
SOURCE = Path(__file__).parent / "java" / "MapReduceStyleAm.java"
MAPS = 60


class JavaAm:
    """The MapReduce-style app's client and AM, in one Java process; its output read as it comes."""

    def __init__(self, conf: Path, tmp: Path) -> None:
        env = {"PATH": "/usr/bin:/bin", "JAVA_HOME": java_home(), "HADOOP_CONF_DIR": str(conf),
               "HADOOP_TOKEN_FILE_LOCATION": str(TOKEN_FILES[conf]), "HOME": str(tmp)}
        self.proc = subprocess.Popen(
            [JAVA or "java", "-cp", f"{conf}:{pyspark_home() / 'jars'}/*", str(SOURCE), str(MAPS)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp,
            start_new_session=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())

    def app_id(self) -> str | None:
        return next((line.split()[1] for line in self.lines if line.startswith("app application_")), None)

    def granted(self) -> int:
        counts = [int(line.split()[1]) for line in self.lines if line.startswith("granted ")]
        return counts[-1] if counts else -1

    def finish(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(60)

    def output(self) -> str:
        return "\n".join(self.lines[-60:])


def sampling_counts(rest: str) -> tuple[float, float]:
    """Pilot containers started, and sampling gates opened, so far (the RM's metrics)."""
    families = {f.name: f for f in text_string_to_metric_families(httpx.get(f"{rest}/metrics", timeout=10).text)}
    pilots = sum(s.value for s in families["shepherd_sampling_pilot_containers"].samples
                 if s.name.endswith("_total"))
    gates = sum(s.value for s in families["shepherd_sampling_gate_wait_seconds"].samples
                if s.name.endswith("_count"))
    return pilots, gates


def test_a_stock_mapreduce_style_app_is_sampled_and_a_spark_app_is_not(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster, viewer, estimate = slearn_cluster(make_cluster, tmp_path)
    conf = hadoop_conf(cluster, tmp_path / "conf")
    with RMClient(cluster.rm_address) as rm:
        hog = fill_with_greedy(cluster, rm, tmp_path)
        am = JavaAm(conf, tmp_path)
        try:
            app_id = wait_until(am.app_id, 120, "the Java client to submit")
            try:
                gated = wait_until(lambda: (e := estimate(app_id))["state"] == "SAMPLING"
                                   and e["sampling"]["pilots"] and e, 120, "the MapReduce-style app to be gated")
            except AssertionError as exc:
                raise AssertionError(f"{exc}: {estimate(app_id)}\n{am.output()}") from None
            assert rm.app(app_id).application_type == "MAPREDUCE"
            assert gated["sampling"]["pilots"] == 2, gated  # ⌈3 % × 60⌉
            wait_until(lambda: am.granted() >= 2, 120, "its pilots to be granted")
            for _ in range(10):  # the cluster is full: it is granted its pilots and no more
                assert am.granted() <= 2, am.output()
                time.sleep(0.5)
            assert estimate(app_id)["state"] == "SAMPLING"
            assert estimate(app_id)["sampling"]["pilotsStarted"] == 2
        finally:
            code = am.finish()
        assert code == 0, am.output()
        assert rm.app(app_id).final_status == "SUCCEEDED"
        rm.kill(hog)

        before = sampling_counts(cluster.rest_url)
        # four executors: as many asks as a wide job's (a stock app of fewer than 3 would be thin anyway)
        spark = subprocess.Popen(spark_args(tmp_path, "cluster", "--num-executors", "4"), stdout=subprocess.DEVNULL,
                                 stderr=(tmp_path / "spark.err").open("w"), env=spark_env(conf), cwd=tmp_path,
                                 start_new_session=True)
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + SPARK_TIMEOUT_S
        while spark.poll() is None and time.monotonic() < deadline:
            text = (tmp_path / "spark.err").read_text()
            if "application_" in text:  # (named by spark-submit a moment before the RM has it)
                answer = httpx.get(f"{cluster.rest_url}/ws/v1/shepherd/apps/{app_of(text)}/estimate", timeout=10,
                                   headers=viewer)
                if answer.status_code == 200:
                    seen.append(answer.json()["estimate"])
            time.sleep(0.5)
        assert spark.wait(30) == 0, (tmp_path / "spark.err").read_text()[-4000:]
        spark_app = app_of((tmp_path / "spark.err").read_text())
        assert rm.app(spark_app).application_type == "SPARK"
        assert seen, "the Spark app's estimate was never read while it ran"
        assert all(e.get("sampling") is None and e["state"] != "SAMPLING" for e in seen), seen
        assert sampling_counts(cluster.rest_url) == before  # no pilot, no gate
