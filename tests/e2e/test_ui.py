"""The web UI in a real headless Chromium (Debian's chromium and chromium-driver, driven by selenium) against a
live secured cluster on loopback: every page renders with the outside network cut off, the overview's numbers
are ``/ws/v1/cluster/metrics``'s, the applications table filtered by state in the URL lists exactly the REST
list's apps, a running DAG job's page shows each stage's state, the kill button is refused without the client
secret and kills with it, the queue bars are ``/ws/v1/cluster/scheduler``'s and the deadline statuses
``/ws/v1/shepherd/deadlines``'s. Screenshots of every page go to a directory under the test's tmp path
(printed). In process: the applications page of a 10,000-app RM renders in under 500 ms, and a DAG's stage
states follow the containers and asks the RM holds for each stage."""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from random import Random
from typing import Any

import httpx
import pytest
import yaml

from rm.local import LocalCluster
from tests.e2e.conftest import kill_strays, sleep_job, submit_job, wait_until, write_job

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
NODE_MB = 4096
CONFIG = {"queues": {"default": {"capacity": 70}, "batch": {"capacity": 30, "maximum-capacity": 60}}}
FINAL = {"FINISHED", "FAILED", "KILLED"}


def _missing_browser() -> str:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if not CHROMIUM or not CHROMEDRIVER:
        return "chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)"
    return ""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    root = tmp_path_factory.mktemp("ui")
    config = root / "shepherd.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    c = LocalCluster(root / "cluster", allow_root_containers=True,
                     nodes=2, grpc_port=0, rest_port=0, ipc_client_port=0, ipc_scheduler_port=0,
                     node_memory_mb=NODE_MB, node_vcores=4, rm_args=["--config", str(config)])
    c.start()
    try:
        yield c
    finally:
        c.stop()
        kill_strays(root)


@pytest.fixture(scope="module")
def http(cluster: LocalCluster) -> Iterator[httpx.Client]:
    """The REST API with the cluster's client secret (the UI tests compare against it)."""
    with httpx.Client(base_url=cluster.rest_url, timeout=30.0,
                      headers={"Authorization": f"Bearer {cluster.client_secret}"}) as client:
        wait_until(lambda: client.get("/ws/v1/cluster/metrics").json()["clusterMetrics"]["activeNodes"] == 2,
                   30, "both NodeManagers to register")
        yield client


@pytest.fixture(scope="module")
def workload(cluster: LocalCluster, http: httpx.Client, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Two plain commands that finish, a reservation, and a two-stage DAG job whose second stage runs long."""
    root = tmp_path_factory.mktemp("ui-jobs")
    out: dict[str, str] = {}
    for name in ("quick-a", "quick-b"):
        app_id = http.post("/ws/v1/cluster/apps/new-application").json()["application-id"]
        resp = http.post("/ws/v1/cluster/apps", json={
            "application-id": app_id, "application-name": name, "application-type": "SCRIPT",
            "application-tags": ["ui-test"], "am-container-spec": {"commands": {"command": "true"}},
            "resource": {"memory": 256, "vCores": 1}})
        assert resp.status_code == 202, resp.text
        out[name] = app_id
    now_ms = int(time.time() * 1000)
    rid = http.post("/ws/v1/cluster/reservation/new-reservation").json()["reservation-id"]
    resp = http.post("/ws/v1/cluster/reservation/submit", json={
        "queue": "default", "reservation-id": rid, "reservation-definition": {
            "arrival": now_ms, "deadline": now_ms + 2 * 3_600_000, "reservation-name": "nightly-report",
            "reservation-requests": {"reservation-request-interpreter": 1, "reservation-request": [
                {"capability": {"memory": 1024, "vCores": 1}, "num-containers": 2, "min-concurrency": 1,
                 "duration": 30 * 60_000}]}}})
    assert resp.status_code == 200, resp.text
    out["reservation"] = rid
    quote = http.post("/ws/v1/shepherd/quotes", json={"queue": "default", "job": {"id": "ui-deadline", "stages": [
        {"name": "only", "tasks": 1, "duration_s": 60, "memory_mb": 256, "command": "sleep 60"}]}})
    assert quote.status_code == 200, quote.text
    app_id = http.post("/ws/v1/cluster/apps/new-application").json()["application-id"]
    resp = http.post("/ws/v1/cluster/apps", json={
        "application-id": app_id, "application-name": "ui-deadline", "queue": "default",
        "application-tags": [f"shepherd.quote={quote.json()['quote']['id']}"],
        "am-container-spec": {"commands": {"command": "sleep 60"}}, "resource": {"memory": 256, "vCores": 1}})
    assert resp.status_code == 202, resp.text
    out["deadline"] = app_id
    job = sleep_job("ui-dag", 1, tasks=2, memory_mb=256, stages=2)
    job["stages"][1].update({"tasks": 1, "duration_s": 300, "command": "sleep 300"})  # until the kill test
    out["dag"] = submit_job(cluster, write_job(root, job), root / "client")

    def ended(app_id: str) -> bool:
        return http.get(f"/ws/v1/cluster/apps/{app_id}").json()["app"]["state"] in FINAL

    for name in ("quick-a", "quick-b"):
        wait_until(partial(ended, out[name]), 60, f"{name} to end")
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    missing = _missing_browser()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the UI tests need a browser under CI: {missing}")
        pytest.skip(missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1300,1000", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-extensions",
                # no outside network: every name but loopback resolves to nothing, any proxied request
                # goes to a port where nothing listens (loopback is never proxied)
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1, EXCLUDE localhost",
                "--proxy-server=http://127.0.0.1:9"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ui-screenshots")
    print(f"\nUI screenshots: {path}")
    return path


def open_page(driver: Any, base: str, path: str) -> None:
    driver.get(base + path)
    wait_until(lambda: driver.execute_script("return document.readyState") == "complete", 20, f"{path} to load")


def metrics(http: httpx.Client) -> dict[str, Any]:
    body: dict[str, Any] = http.get("/ws/v1/cluster/metrics").json()["clusterMetrics"]
    return body


def steady(read_rest: Callable[[], Any], read_page: Callable[[], Any], what: str) -> tuple[Any, Any]:
    """The REST answer and the page's, from a moment the REST answer did not change around the page load."""
    for _ in range(20):
        before = read_rest()
        seen = read_page()
        if read_rest() == before:
            return before, seen
        time.sleep(0.3)
    raise AssertionError(f"{what} never held still long enough to compare")


def page_numbers(driver: Any) -> dict[str, str]:
    numbers: dict[str, str] = driver.execute_script(
        "var o = {}; document.querySelectorAll('[data-metric]').forEach(function (e) {"
        " o[e.getAttribute('data-metric')] = e.textContent.trim(); }); return o;")
    return numbers


def test_overview_shows_the_metrics_endpoint_numbers(
    cluster: LocalCluster, http: httpx.Client, workload: dict[str, str], browser: Any
) -> None:
    def read_page() -> dict[str, str]:
        open_page(browser, cluster.rest_url, "/")
        return page_numbers(browser)

    rest, shown = steady(lambda: metrics(http), read_page, "the cluster metrics")
    counts = ("appsSubmitted", "appsPending", "appsRunning", "appsCompleted", "appsFailed", "appsKilled",
              "containersAllocated", "containersPending", "totalNodes", "activeNodes", "unhealthyNodes",
              "decommissioningNodes", "decommissionedNodes", "lostNodes", "rebootedNodes", "shutdownNodes",
              "totalVirtualCores", "allocatedVirtualCores", "availableVirtualCores", "pendingVirtualCores")
    for key in counts:
        assert shown[key] == str(rest[key]), (key, shown[key], rest[key])
    for key in ("totalMB", "allocatedMB", "availableMB", "pendingMB"):
        assert _mb(shown[key]) == pytest.approx(rest[key], rel=0.05, abs=1), (key, shown[key], rest[key])
    assert rest["appsSubmitted"] >= 3
    assert rest["activeNodes"] == 2
    grid = browser.execute_script("return document.querySelectorAll('.grid .tile').length")
    assert grid == 2


def _mb(text: str) -> float:
    number, unit = text.split()
    return float(number) * {"MB": 1, "GB": 1024, "TB": 1024 * 1024}[unit]


def test_filtering_apps_by_state_in_the_url_lists_the_rest_apps(
    cluster: LocalCluster, http: httpx.Client, workload: dict[str, str], browser: Any
) -> None:
    for state in ("FINISHED", "RUNNING"):
        def rest(state: str = state) -> set[str]:
            apps = http.get("/ws/v1/cluster/apps", params={"states": state}).json()["apps"]["app"]
            return {a["id"] for a in apps}

        def shown(state: str = state) -> set[str]:
            open_page(browser, cluster.rest_url, f"/ui/apps?state={state}")
            rows = browser.execute_script(
                "return Array.from(document.querySelectorAll('table.apps tr[data-app]'))"
                ".map(function (r) { return [r.getAttribute('data-app'), r.getAttribute('data-state')]; });")
            assert {s for _, s in rows} <= {state}
            return {a for a, _ in rows}

        expected, seen = steady(rest, shown, f"the {state} apps")
        assert seen == expected
        assert expected, f"no {state} app to compare"
    # the filter stays in the form and in the pager's links
    assert browser.find_element("css selector", "select[name=state] option[selected]").get_attribute("value") \
        == "RUNNING"
    open_page(browser, cluster.rest_url, "/ui/apps?tag=ui-test&type=script")
    ids = browser.execute_script(
        "return Array.from(document.querySelectorAll('tr[data-app]')).map(function (r) {"
        " return r.getAttribute('data-app'); });")
    assert set(ids) == {workload["quick-a"], workload["quick-b"]}


def stage_states(driver: Any) -> dict[str, tuple[str, str]]:
    states: dict[str, list[str]] = driver.execute_script(
        "var o = {}; document.querySelectorAll('svg.dag g.stage').forEach(function (g) {"
        " o[g.getAttribute('data-stage')] = [g.getAttribute('data-state'), g.getAttribute('data-done')]; });"
        " return o;")
    return {k: (v[0], v[1]) for k, v in states.items()}


def sign_in(driver: Any, base: str, credential: str) -> None:
    """Sign in from the header's field, as a user would (the page reloads reading as the credential's user)."""
    open_page(driver, base, "/ui/apps")
    field = driver.find_element("id", "signin-credential")
    field.clear()
    field.send_keys(credential)
    driver.find_element("css selector", "#signin button").click()
    wait_until(lambda: driver.find_elements("id", "signout"), 20, "the page to come back signed in")


def test_a_browser_sees_other_users_apps_restricted_until_it_signs_in(
    cluster: LocalCluster, http: httpx.Client, workload: dict[str, str], browser: Any
) -> None:
    """Without a credential the browser reads as dr.who, who may not view the apps (VIEW_APP): their pages
    show YARN's restricted report and no DAG, attempts or containers. Signed in with the client secret (the
    cluster owner's, an admin) it sees them whole; signed out, restricted again. The later tests read signed in."""
    app_id = workload["dag"]
    browser.delete_all_cookies()
    open_page(browser, cluster.rest_url, f"/ui/apps/{app_id}")
    assert browser.find_element("id", "who").get_attribute("data-user") == "dr.who"
    assert "may not see the details" in browser.find_element("id", "restricted").text
    assert not browser.find_elements("css selector", "svg.dag")
    assert not browser.find_elements("id", "containers")
    assert browser.find_element("id", "summary").get_attribute("data-state") == \
        http.get(f"/ws/v1/cluster/apps/{app_id}").json()["app"]["state"]

    sign_in(browser, cluster.rest_url, cluster.client_secret)
    assert browser.find_element("id", "who").get_attribute("data-user") != "dr.who"
    open_page(browser, cluster.rest_url, f"/ui/apps/{app_id}")
    assert not browser.find_elements("id", "restricted")
    assert browser.find_elements("css selector", "svg.dag")

    browser.find_element("id", "signout").click()
    wait_until(lambda: browser.find_elements("id", "signin"), 20, "the page to come back signed out")
    assert browser.find_element("id", "restricted")
    sign_in(browser, cluster.rest_url, cluster.client_secret)


def test_a_running_dag_job_shows_each_stage_state(
    cluster: LocalCluster, http: httpx.Client, workload: dict[str, str], browser: Any
) -> None:
    app_id = workload["dag"]
    page = re.compile(r'data-stage="s1" data-state="RUNNING"')
    wait_until(lambda: page.search(http.get(f"/ui/apps/{app_id}").text), 90, "the second stage to run")
    open_page(browser, cluster.rest_url, f"/ui/apps/{app_id}")
    assert stage_states(browser) == {"s0": ("SUCCEEDED", "2"), "s1": ("RUNNING", "0")}
    assert browser.find_element("id", "summary").get_attribute("data-state") == "RUNNING"
    # the stage table agrees with the drawing, and the containers link to their NodeManager's logs
    rows = browser.execute_script(
        "return Array.from(document.querySelectorAll('table.stages tr[data-stage]')).map(function (r) {"
        " return r.getAttribute('data-stage') + '=' + r.getAttribute('data-state'); });")
    assert rows == ["s0=SUCCEEDED", "s1=RUNNING"]
    links = browser.execute_script(
        "return Array.from(document.querySelectorAll('#containers a')).map(function (a) { return a.href; })"
        ".filter(function (h) { return h.indexOf('/ws/v1/node/containers/') > 0; });")
    assert len(links) >= 4  # the AM, two finished tasks of s0, the running task of s1
    roles = browser.execute_script(
        "return Array.from(document.querySelectorAll('#containers tr[data-container] td:nth-child(2)'))"
        ".map(function (td) { return td.textContent; });")
    assert sorted(roles) == ["AM", "s0", "s0", "s1"]
    assert all(re.match(r"http://127\.0\.0\.1:\d+/ws/v1/node/containers/container_\S+/logs$", h) for h in links)
    assert browser.find_element("id", "why").is_displayed()


def test_queue_bars_match_the_scheduler_endpoint(
    cluster: LocalCluster, http: httpx.Client, workload: dict[str, str], browser: Any
) -> None:
    def rest() -> dict[str, tuple[float, float, float]]:
        out: dict[str, tuple[float, float, float]] = {}

        def walk(q: dict[str, Any]) -> None:
            out[q["queuePath"]] = (q["absoluteCapacity"], q["absoluteUsedCapacity"], q["absoluteMaxCapacity"])
            for child in (q.get("queues") or {}).get("queue", []):
                walk(child)

        walk(http.get("/ws/v1/cluster/scheduler").json()["scheduler"]["schedulerInfo"])
        return out

    def shown() -> dict[str, tuple[float, float, float]]:
        open_page(browser, cluster.rest_url, "/ui/queues")
        bars = browser.execute_script(
            "return Array.from(document.querySelectorAll('.qbar')).map(function (b) { return ["
            " b.getAttribute('data-queue'), b.getAttribute('data-capacity'), b.getAttribute('data-used'),"
            " b.getAttribute('data-max'), b.querySelector('.used').style.width]; });")
        out = {}
        for path, cap, used, most, width in bars:
            assert float(width.rstrip("%")) == pytest.approx(min(100.0, float(used)), abs=0.01)
            out[path] = (float(cap), float(used), float(most))
        return out

    expected, seen = steady(rest, shown, "the queue tree")
    assert seen == expected
    assert set(seen) == {"root", "root.default", "root.batch"}
    assert seen["root.batch"][2] == 60.0


def test_nodes_and_app_pages_draw_usage_and_progress_bars(
    cluster: LocalCluster, http: httpx.Client, workload: dict[str, str]
) -> None:
    """The nodes page's memory and vcore bars are the REST nodes' used/total; the app page's progress bar is
    the REST app's progress, and its attempts table has the REST attempts (server-rendered: no browser
    needed)."""
    def rest_nodes() -> dict[str, tuple[float, float]]:
        nodes = http.get("/ws/v1/cluster/nodes").json()["nodes"]["node"]
        return {n["id"]: (round(100 * n["usedResource"]["memory"] / n["totalResource"]["memory"], 2),
                          round(100 * n["usedResource"]["vCores"] / n["totalResource"]["vCores"], 2)) for n in nodes}

    def page_nodes() -> dict[str, tuple[float, float]]:
        html = http.get("/ui/nodes").text
        rows = re.findall(r'<tr data-node="([^"]+)".*?data-used="([\d.]+)".*?data-used="([\d.]+)"', html)
        return {node: (float(mem), float(cpu)) for node, mem, cpu in rows}

    expected, seen = steady(rest_nodes, page_nodes, "the nodes' usage")
    assert seen == expected
    assert len(seen) == 2
    assert any(mem > 0 for mem, _ in seen.values())  # the DAG job's containers hold memory

    app_id = workload["dag"]

    def rest_progress() -> float:
        return float(http.get(f"/ws/v1/cluster/apps/{app_id}").json()["app"]["progress"])

    def page_progress() -> float:
        m = re.search(r'data-progress="([\d.]+)"', http.get(f"/ui/apps/{app_id}").text)
        assert m, "no progress bar"
        return float(m.group(1))

    progress, shown = steady(rest_progress, page_progress, "the app's progress")
    assert shown == pytest.approx(progress)
    attempts = http.get(f"/ws/v1/cluster/apps/{app_id}/appattempts").json()["appAttempts"]["appAttempt"]
    page = http.get(f"/ui/apps/{app_id}").text
    for attempt in attempts:  # the attempts table names each attempt and its AM container
        assert attempt["appAttemptId"] in page
        assert attempt["containerId"] in page


def test_deadlines_page_shows_the_deadlines_endpoint_statuses(
    cluster: LocalCluster, http: httpx.Client, workload: dict[str, str], browser: Any
) -> None:
    def rest() -> dict[str, str]:
        items = http.get("/ws/v1/shepherd/deadlines").json()["deadlines"]["deadline"]
        return {d["id"]: d["status"] for d in items}

    def shown() -> dict[str, str]:
        open_page(browser, cluster.rest_url, "/ui/deadlines")
        rows: dict[str, str] = browser.execute_script(
            "var o = {}; document.querySelectorAll('table.deadlines tr[data-app]').forEach(function (r) {"
            " o[r.getAttribute('data-app')] = r.getAttribute('data-status'); }); return o;")
        return rows

    expected, seen = steady(rest, shown, "the deadlines")
    assert seen == expected
    assert workload["deadline"] in seen
    counts = page_numbers(browser)
    for status in ("ON_TRACK", "AT_RISK", "MET", "MISSED"):
        assert counts[status] == str(sum(1 for s in expected.values() if s == status))
    open_page(browser, cluster.rest_url, f"/ui/apps/{workload['deadline']}")
    panel = browser.find_element("css selector", "#deadline table").get_attribute("data-deadline-status")
    assert panel in ("ON_TRACK", "AT_RISK", "MET", "MISSED")


def test_every_page_renders_without_the_outside_network(
    cluster: LocalCluster, workload: dict[str, str], browser: Any, shots: Path
) -> None:
    node = _first_node(cluster)
    pages = {
        "overview": "/", "apps": "/ui/apps", "apps-running": "/ui/apps?state=RUNNING",
        "app-dag": f"/ui/apps/{workload['dag']}", "app-finished": f"/ui/apps/{workload['quick-a']}",
        "app-deadline": f"/ui/apps/{workload['deadline']}",
        "nodes": "/ui/nodes", "node": f"/ui/nodes/{node}", "queues": "/ui/queues",
        "reservations": "/ui/reservations", "deadlines": "/ui/deadlines", "missing-app": "/ui/apps/application_1_9999",
        "missing-page": "/ui/no/such/page",
    }
    browser.get_log("browser")  # drop what earlier pages logged
    for name, path in pages.items():
        open_page(browser, cluster.rest_url, path)
        assert len(browser.find_elements("css selector", "header nav a")) == 6, name
        assert browser.find_elements("css selector", "header nav a.on") or name == "missing-page"
        heading = browser.find_element("tag name", "h1").text
        assert heading, name
        # the script ran: the stamp counts seconds since the data was read
        wait_until(lambda: re.match(r"updated \d+ s ago", browser.find_element("id", "stamp").text), 5,
                   f"{name}'s live stamp")
        resources = browser.execute_script(
            "return performance.getEntriesByType('resource').map(function (e) { return e.name; });")
        assert all(r.startswith(cluster.rest_url) for r in resources), (name, resources)
        assert f"{cluster.rest_url}/ui/static/ui.css" in resources, name
        width = browser.execute_script("return document.body.scrollWidth")
        height = browser.execute_script("return document.body.scrollHeight")
        browser.set_window_size(max(1300, width), min(4000, max(1000, height + 40)))
        browser.save_screenshot(str(shots / f"{name}.png"))
        browser.set_window_size(1300, 1000)
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"
                  and not (name.startswith("missing") and "404" in e["message"])]
        assert not errors, (name, errors)
    # and the browser really has no way out (the request ends at the dead proxy on loopback)
    outside = browser.execute_async_script(
        "var done = arguments[arguments.length - 1];"
        "fetch('http://example.com/', {mode: 'no-cors'}).then(function () { done('reached'); },"
        " function (e) { done('failed: ' + e); });")
    assert outside.startswith("failed"), outside
    open_page(browser, cluster.rest_url, "/ui/reservations")
    bands = browser.execute_script(
        "return Array.from(document.querySelectorAll('svg.skyline .band')).map(function (p) {"
        " return p.getAttribute('data-reservation'); });")
    assert workload["reservation"] in bands
    assert len(list(shots.glob("*.png"))) == len(pages)


def test_the_nodemanager_page_and_back(cluster: LocalCluster, http: httpx.Client, browser: Any, shots: Path) -> None:
    """From a node's page in the RM's UI to its NodeManager's own page and back, nothing fetched elsewhere."""
    node = _first_node(cluster)
    open_page(browser, cluster.rest_url, f"/ui/nodes/{node}")
    nm_url = f"http://{http.get(f'/ws/v1/cluster/nodes/{node}').json()['node']['nodeHTTPAddress']}/"
    nm_link = browser.find_element("css selector", f"a[href='{nm_url}']")
    nm_link.click()
    wait_until(lambda: browser.current_url == nm_url and browser.find_elements("tag name", "h1"), 20,
               "the NodeManager's page")
    assert browser.find_element("tag name", "h1").text == f"Node {node}"
    assert browser.find_element("id", "state").text == "RUNNING"
    resources = browser.execute_script(
        "return performance.getEntriesByType('resource').map(function (e) { return e.name; });")
    assert resources == []  # one document, its style inline
    browser.save_screenshot(str(shots / "nodemanager.png"))
    back = browser.find_element("id", "rm-ui")
    assert back.get_attribute("href") == f"{cluster.rest_url}/ui/nodes/{node.replace(':', '%3A')}"
    back.click()
    wait_until(lambda: browser.current_url.startswith(cluster.rest_url + "/ui/nodes/"), 20, "the RM's node page")
    assert browser.find_element("tag name", "h1").text


def _first_node(cluster: LocalCluster) -> str:
    nodes = httpx.get(f"{cluster.rest_url}/ws/v1/cluster/nodes", timeout=10).json()["nodes"]["node"]
    return str(nodes[0]["id"])


def kill_from_page(driver: Any, secret: str) -> str:
    driver.execute_script("document.getElementById('kill-result').textContent = ''")  # no answer of before
    field = driver.find_element("id", "kill-secret")
    field.clear()
    if secret:
        field.send_keys(secret)
    driver.find_element("id", "kill-button").click()
    wait_until(lambda: _alert(driver), 5, "the confirmation").accept()
    return str(wait_until(lambda: _result(driver), 20, "the RM's answer"))


def _alert(driver: Any) -> Any:
    from selenium.common.exceptions import NoAlertPresentException

    try:
        return driver.switch_to.alert
    except NoAlertPresentException:
        return None


def _result(driver: Any) -> str:
    text = driver.find_element("id", "kill-result").text
    return "" if text.startswith("Asking") else text


def test_the_kill_button_is_refused_without_the_secret_and_kills_with_it(
    cluster: LocalCluster, http: httpx.Client, workload: dict[str, str], browser: Any
) -> None:
    app_id = workload["dag"]
    open_page(browser, cluster.rest_url, f"/ui/apps/{app_id}")
    assert browser.find_element("id", "kill").get_attribute("data-secured") == "true"
    assert "client secret" in browser.find_element("id", "kill").text
    browser.execute_script("sessionStorage.clear()")
    said = kill_from_page(browser, "")
    assert said.startswith("Refused (HTTP 401)"), said
    assert "client secret" in said
    assert "refused" in (browser.find_element("id", "kill-result").get_attribute("class") or "")
    assert http.get(f"/ws/v1/cluster/apps/{app_id}/state").json()["state"] == "RUNNING"
    said = kill_from_page(browser, "not-the-secret")
    assert said.startswith("Refused (HTTP 403)"), said
    assert http.get(f"/ws/v1/cluster/apps/{app_id}/state").json()["state"] == "RUNNING"

    said = kill_from_page(browser, cluster.client_secret)
    assert said.startswith("Killed"), said
    assert http.get(f"/ws/v1/cluster/apps/{app_id}").json()["app"]["state"] == "KILLED"
    # the page refreshes itself: the stages that had not finished show as killed, the kill panel is gone
    wait_until(lambda: stage_states(browser).get("s1", ("",))[0] == "KILLED", 20, "the page to show the kill")
    assert stage_states(browser)["s0"] == ("SUCCEEDED", "2")
    assert not browser.find_elements("id", "kill-button")


# ---------------------------------------------------------------------------------------------- in process


class _RM:
    """The parts of the ResourceManager the UI reads, over a real Ledger with many apps (no daemons)."""

    def __init__(self, apps: int) -> None:
        from common.resources import Resources
        from rm.core.ledger import Ledger
        from rm.core.policies.registry import default_pipeline
        from rm.core.queues import build_queues
        from rm.core.state_types import SubmitSpec
        from rm.service.config import RMConfig
        from rm.service.metrics import RMMetrics

        queues = {"default": {"capacity": 60}, "batch": {"capacity": 40}}
        self.cfg = RMConfig(queues=queues)
        self.clock = 1_700_000_000.0
        self.state = Ledger(Ledger.fresh_meta(1_700_000_000_000), build_queues(queues), self.cfg.core())
        self.metrics = RMMetrics(self)  # type: ignore[arg-type]
        self.pipeline, self.shares = default_pipeline()
        for i in range(4):
            self.state.register_node(f"n{i}:7040", f"n{i}:8042", "", Resources.of(memory_mb=8192, vcores=8), [],
                                     self.clock)
        rng = Random(7)
        for i in range(apps):
            app_id = self.state.new_application(self.clock)
            self.state.submit(SubmitSpec(app_id=app_id, name=f"job-{i}", queue=rng.choice(["default", "batch"]),
                                         user=rng.choice(["ana", "bo", "cy"]), tags=(f"t{i % 7}",),
                                         am_launch={"commands": ["sleep 60"]}),
                              self.clock + i * 0.001)
            if i % 3 == 0:
                self.state.kill(app_id, "done with it", self.clock + 1)

    def now(self) -> float:
        return self.clock + 60

    async def persist(self) -> None:
        self.state.stored(self.state.drain_records())

    def kick(self) -> None:
        pass


def test_the_applications_page_of_10000_apps_renders_in_under_half_a_second() -> None:
    from fastapi.testclient import TestClient

    from rm.service.rest import build_app

    rm = _RM(10_000)
    client = TestClient(build_app(rm))  # type: ignore[arg-type]
    for query, total in (("", 10_000), ("?state=KILLED", 3334), ("?queue=batch&user=ana&tag=t3", None)):
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            resp = client.get(f"/ui/apps{query}")
            best = min(best, time.perf_counter() - t0)
            assert resp.status_code == 200
        shown = re.search(r'data-total="(\d+)"', resp.text)
        assert shown is not None
        if total is not None:
            assert int(shown.group(1)) == total
        assert resp.text.count("<tr data-app=") == min(50, int(shown.group(1)))
        print(f"/ui/apps{query}: {shown.group(1)} apps match, first page in {best * 1000:.0f} ms")
        assert best < 0.5, f"/ui/apps{query} took {best * 1000:.0f} ms"
    last = client.get("/ui/apps?page=200")
    assert last.text.count("<tr data-app=") == 50
    assert "page 200 of 200" in last.text
    for path in ("/", "/ui/queues", "/ui/deadlines"):  # the other pages that read every app
        t0 = time.perf_counter()
        assert client.get(path).status_code == 200
        took = time.perf_counter() - t0
        print(f"{path} of 10,000 apps in {took * 1000:.0f} ms")
        assert took < 2.0, f"{path} took {took * 1000:.0f} ms"


def test_dag_stage_states_follow_the_containers_and_asks_of_each_stage() -> None:
    """A diamond job in the middle of its run: each stage's state from what the RM holds for it."""
    import json

    from am.policies.api import ALTRUISTIC_BASE, request_id
    from common.ids import AppId, AttemptId, ContainerId, NodeId, QueuePath
    from common.resources import Resources
    from rm.core.entities import App, Ask, Attempt, Container
    from rm.service.stages import job_of, stage_states
    from rm.service.ui.dag import dag_svg

    r = Resources.of(memory_mb=256, vcores=1)
    job = {"id": "diamond", "stages": [
        {"name": "extract", "tasks": 2, "memory_mb": 256, "command": "x"},
        {"name": "clean", "tasks": 2, "memory_mb": 256, "parents": ["extract"], "command": "x"},
        {"name": "join", "tasks": 2, "memory_mb": 256, "parents": ["extract"], "command": "x"},
        {"name": "load", "tasks": 1, "memory_mb": 256, "parents": ["clean", "join"], "command": "x"}]}
    app = App(AppId("application_1_0001"), "diamond", QueuePath("root.default"), "ana", "SHEPHERD-DAG", 0, r, {},
              2, (), False, json.dumps(job), 1.0, "RUNNING")
    att = Attempt(AttemptId("appattempt_1_0001_000001"), app.app_id, 1, "RUNNING", 1.0)
    att.asks[request_id(2, "ALTRUISTIC")] = Ask(request_id(2, "ALTRUISTIC"), 1, r, 2, stage="join")
    app.attempts.append(att)
    seq = iter(range(1, 100))

    def container(stage: int, state: str, exit_status: int = -1000, *, is_am: bool = False) -> Container:
        c = Container(ContainerId(f"container_1_0001_01_{next(seq):06d}"), app.app_id, att.attempt_id,
                      NodeId("n1:1"), r, 1, 0 if is_am else request_id(stage), "DEFAULT", is_am, state, 1.0)
        c.exit_status = exit_status
        return c

    held = [container(0, "RUNNING", is_am=True), container(0, "COMPLETED", 0), container(0, "COMPLETED", 0),
            container(1, "RUNNING"), container(1, "COMPLETED", 1)]
    parsed = job_of(app)
    assert parsed is not None
    states = {s.name: (s.state, s.done, s.running, s.waiting, s.failed) for s in stage_states(app, parsed, held)}
    assert states == {"extract": ("SUCCEEDED", 2, 0, 0, 0), "clean": ("RUNNING", 0, 1, 0, 1),
                      "join": ("WAITING", 0, 0, 2, 0), "load": ("BLOCKED", 0, 0, 0, 0)}
    assert request_id(2, "ALTRUISTIC") > ALTRUISTIC_BASE  # an altruistic ask counts for its stage too
    svg = dag_svg(stage_states(app, parsed, held))
    columns = {name: int(x) for name, x in re.findall(r'data-stage="(\w+)".*?translate\((\d+),', svg)}
    assert columns["extract"] < columns["clean"] == columns["join"] < columns["load"]
    # the join's containers all placed and nothing asked yet for the load: it becomes ready once both parents
    # are done; a killed app leaves its unfinished stages KILLED
    att.asks.clear()
    held += [container(1, "COMPLETED", 0), container(1, "COMPLETED", 0), container(2, "COMPLETED", 0),
             container(2, "COMPLETED", 0)]
    held[3].state, held[3].exit_status = "COMPLETED", -105
    assert [s.state for s in stage_states(app, parsed, held)] == ["SUCCEEDED", "SUCCEEDED", "SUCCEEDED", "READY"]
    app.state, app.final_status = "KILLED", "KILLED"
    assert [s.state for s in stage_states(app, parsed, held)] == ["SUCCEEDED", "SUCCEEDED", "SUCCEEDED", "KILLED"]
