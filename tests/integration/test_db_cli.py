"""``shepherd db status|upgrade``: the store's schema against this build's, upgraded as a step of its own."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from typer.testing import CliRunner

from rm.cli import app
from rm.service.store.store import Store, default_sqlite_url, migrations_dir

runner = CliRunner()


def _at(url: str, revision: str) -> None:
    """A store created by an older build: its schema stops at ``revision``."""
    store = Store(url)
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    with store._engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)


def test_status_and_upgrade_of_an_older_store(tmp_path: Path) -> None:
    url = default_sqlite_url(tmp_path)
    _at(url, "0010")
    before = runner.invoke(app, ["db", "status", "--store-url", url])
    assert before.exit_code == 1, before.output  # an upgrade is due
    assert "0010" in before.output
    assert "0011, 0012" in before.output
    _, head, due = Store(url).revisions()
    assert due[:2] == ["0011", "0012"]  # every later migration is due, in order
    assert due[-1] == head
    up = runner.invoke(app, ["db", "upgrade", "--data-dir", str(tmp_path)])
    assert up.exit_code == 0, up.output
    assert f"0010 -> {head} ({', '.join(due)})" in up.output
    current, head, pending = Store(url).revisions()
    assert (current, pending) == (head, [])
    after = runner.invoke(app, ["db", "status", "--data-dir", str(tmp_path)])
    assert after.exit_code == 0, after.output
    again = runner.invoke(app, ["db", "upgrade", "--store-url", url])
    assert "already at" in again.output


def test_a_missing_store_is_created_only_when_asked(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["db", "upgrade", "--data-dir", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2
    assert "--create" in missing.output
    assert not (tmp_path / "nowhere").exists()
    assert runner.invoke(app, ["db", "status", "--data-dir", str(tmp_path / "nowhere")]).exit_code == 2
    created = runner.invoke(app, ["db", "upgrade", "--data-dir", str(tmp_path / "new"), "--create"])
    assert created.exit_code == 0, created.output
    assert "created at" in created.output
    assert Store(default_sqlite_url(tmp_path / "new")).exists()
