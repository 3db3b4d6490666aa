"""The NodeManager's own web page (``/`` and ``/node``) on a NodeManager daemon against a fake ResourceTracker:
the node's id, state, resources, its RM, a running and a completed container with working log links, and a
link back to the RM's UI; and the page built from data, escaping what containers say."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from nodemanager.page import node_page
from tests.integration.test_nodemanager import cid, running_nm, wait_for_file


class Links(HTMLParser):
    """Every link of a page, and whether it loads anything from elsewhere (scripts, styles, images)."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "a" and a.get("href"):
            self.hrefs.append(str(a["href"]))
        if tag in ("script", "img", "iframe") or (tag == "link" and not str(a.get("href", "")).startswith("data:")):
            self.external.append(tag)


def links(html: str) -> Links:
    parser = Links()
    parser.feed(html)
    return parser


@pytest.mark.asyncio
async def test_the_node_page(tmp_path: Path) -> None:
    done, running = cid(2), cid(3)
    async with running_nm(tmp_path, rm_web_url="http://rm.example:8088") as h:
        await h.start(done, "echo finished")
        await h.rm.completed(done)
        await h.start(running, "echo started; sleep 60", memory_mb=512)
        await wait_for_file(h.dirs(running).logs / "stdout")

        status, body = await h.http_get("/")
        assert status == 200
        html = body.decode()
        assert (await h.http_get("/node"))[0] == 200
        assert html.startswith("<!doctype html>")
        assert f"Node {h.nm.node_id}" in html
        assert '<span id="state" class="ok">RUNNING</span>' in html
        assert f"<th>ResourceManager</th><td>{h.nm.cfg.rm_address} · " in html
        # resources: 512 MB of the 4 GB in use by the running container, 1 of 4 vcores, the gpu none
        assert re.search(r'data-resource="memory-mb"><th>memory-mb</th><td>512 MB of 4 GB', html)
        assert re.search(r'data-resource="vcores"><th>vcores</th><td>1 vcores of 4 vcores', html)
        assert 'data-resource="gpu"' in html
        running_part, recent_part = html.split('id="recent"')
        assert "Running containers (1)" in running_part
        assert f'data-container="{running}"' in running_part
        assert f'data-container="{done}"' in recent_part
        found = links(html)
        assert not found.external  # one document: inline style, no scripts, images or stylesheets
        assert f"http://rm.example:8088/ui/nodes/{h.nm.node_id.replace(':', '%3A')}" in found.hrefs
        assert "http://rm.example:8088/ui" in found.hrefs
        for c, text in ((done, b"finished\n"), (running, b"started\n")):
            log = f"/ws/v1/node/containers/{c}/logs/stdout"
            assert log in found.hrefs
            assert await h.http_get(log) == (200, text)
        assert f"/ws/v1/node/containers/{done}/logs/stderr" in found.hrefs

        assert (await h.http_get("/nodes"))[0] == 404  # only / and /node
        head = await h.http_get("/ws/v1/node/info")
        assert head[0] == 200


def test_the_page_escapes_what_containers_say() -> None:
    info = {"id": "n1:7040", "registered": True, "nodeHealthy": False, "healthReport": "disk <full>",
            "capability": {"memory-mb": 2048, "vcores": 2}, "used": {}, "resourceManagerAddress": "rm:7030"}
    bad = {"id": "container_1_0001_01_000002", "appId": "application_1_0001", "user": "<b>eve</b>",
           "state": "COMPLETE", "exitCode": 1, "diagnostics": "<script>alert(1)</script>", "startTime": 1000,
           "finishTime": 2000, "totalMemoryNeededMB": 256, "totalVCoresNeeded": 1}
    html = node_page(info, [bad], rm_web_url="", now_ms=5000)
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert "&lt;b&gt;eve" in html
    assert '<span id="state" class="bad">UNHEALTHY</span> — disk &lt;full&gt;' in html
    assert "No container runs here." in html
    assert "Recently completed containers (1)" in html
    assert 'id="rm-ui"' not in html  # no RM web address known: no link
    fresh = node_page({**info, "registered": False}, [], rm_web_url="http://rm:8088/", now_ms=0)
    assert "REGISTERING" in fresh
    assert 'href="http://rm:8088/ui/nodes/n1%3A7040"' in fresh


def test_where_the_page_links_the_rm_ui(tmp_path: Path) -> None:
    """yarn.resourcemanager.webapp.address from the site files, else --rm-web, else port 8088 on the --rm host."""
    from nodemanager.config import NodeManagerConfig, load_nm_settings
    from nodemanager.daemon import _parser, _rm_web_default, config_from_args

    (tmp_path / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.resourcemanager.webapp.address</name><value>0.0.0.0:18088</value>"
        "</property></configuration>")
    s = load_nm_settings(NodeManagerConfig(), env={"HADOOP_CONF_DIR": str(tmp_path)})
    assert s.config.rm_web_url == "http://127.0.0.1:18088"
    assert load_nm_settings(NodeManagerConfig(), env={}).config.rm_web_url == ""  # not configured: derived
    flagged = config_from_args(_parser().parse_args(["--rm", "rm1:7030,rm2:7030", "--rm-web", "http://ui:9"]))
    assert flagged.rm_web_url == "http://ui:9"
    assert _rm_web_default("rm1.example:7030,rm2.example:7030") == "http://rm1.example:8088"
