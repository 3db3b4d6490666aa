"""The CLI's user config file: where it is, what a malformed one says, how `shepherd config` edits it, and the
order in which a command finds its cluster (flag > env > current cluster > $HADOOP_CONF_DIR > default), never
taking its gRPC address and its REST URL from two clusters."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from common import credentials, user_config
from common.user_config import UserConfigError, resolve_rest, resolve_rm
from rm import cli
from rm.commands.common import REST_OPT, RM_OPT
from rm.commands.target import CLUSTER_KEY

PROD = {"rm": "prod-rm:7030", "rest": "http://prod-rm:8088"}
LAB = {"rm": "lab-rm:7030", "rest": "http://lab-rm:8088"}
ADDRESS_VARS = ("SHEPHERD_RM", "SHEPHERD_REST", "SHEPHERD_CONFIG", "XDG_CONFIG_HOME", "HADOOP_CONF_DIR",
                "YARN_CONF_DIR", "SHEPHERD_CLIENT_SECRET", "SHEPHERD_CREDENTIALS")


def write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config file with clusters prod (current) and lab, pointed at by $SHEPHERD_CONFIG; no address variables."""
    for var in ADDRESS_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = write(tmp_path / "cfg" / "config.yaml", {"current-cluster": "prod", "clusters": {"prod": PROD, "lab": LAB}})
    monkeypatch.setenv("SHEPHERD_CONFIG", str(path))
    return path


# ---------------------------------------------------------------------------- where the file is


def test_the_file_is_found_by_variable_then_xdg_then_home(tmp_path: Path) -> None:
    home = {"HOME": str(tmp_path)}
    assert user_config.config_path(home) == tmp_path / ".config" / "shepherd" / "config.yaml"
    xdg = {**home, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert user_config.config_path(xdg) == tmp_path / "xdg" / "shepherd" / "config.yaml"
    assert user_config.config_path({**home, "XDG_CONFIG_HOME": "relative/dir"}) == \
        tmp_path / ".config" / "shepherd" / "config.yaml"  # the XDG spec ignores a relative one
    assert user_config.config_path({**xdg, "SHEPHERD_CONFIG": str(tmp_path / "mine.yaml")}) == tmp_path / "mine.yaml"


def test_a_missing_file_has_no_clusters_and_saving_writes_0600(tmp_path: Path) -> None:
    path = tmp_path / "new" / "config.yaml"
    empty = user_config.load(path)
    assert empty.clusters == ()
    assert empty.current is None
    edited = empty.with_cluster(user_config.NamedCluster("prod", "prod-rm:7030", "http://prod-rm:8088")).using("prod")
    write(path, "world readable before\n").chmod(0o644)
    user_config.save(edited)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = user_config.load(path)
    assert again.current == "prod"
    assert again.clusters == edited.clusters
    # removing the current cluster leaves none current (not some other one)
    assert again.with_cluster(user_config.NamedCluster("lab", "lab:1", "http://lab:2")).without("prod").current is None


@pytest.mark.parametrize(("text", "says"), [
    ("clusters: [prod\n", "not valid YAML"),
    ("- prod\n", "must be a mapping"),
    ("current: prod\n", "unknown key 'current'"),
    ("clusters: {prod: {rm: 'prod-rm:7030'}}\n", "clusters.prod.rest: missing"),
    ("clusters: {prod: {rm: prod-rm, rest: 'http://x'}}\n", "clusters.prod.rm: 'prod-rm' is not a host:port"),
    ("clusters: {prod: {rm: 'a:1', rest: 'ftp://x'}}\n", "clusters.prod.rest: 'ftp://x' is not an http(s) URL"),
    ("clusters: {prod: {rm: 'a:1', rest: 'x', token: t}}\n", "clusters.prod: unknown key 'token'"),
    ("current-cluster: lab\nclusters: {prod: {rm: 'a:1', rest: 'x'}}\n", "current-cluster: 'lab' is not one"),
])
def test_a_malformed_file_is_one_line_naming_the_file(tmp_path: Path, text: str, says: str) -> None:
    path = write(tmp_path / "config.yaml", text)
    with pytest.raises(UserConfigError) as err:
        user_config.load(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ")
    assert says in message
    assert "\n" not in message


# ---------------------------------------------------------------------------- the order


def rm_of(env: dict[str, str], **flags: str | None) -> tuple[str, str]:
    found = resolve_rm(rm=flags.get("rm"), rest=flags.get("rest"), cluster=flags.get("cluster"), env=env)
    return found.address, found.source


def rest_of(env: dict[str, str], hadoop: str | None = None, **flags: str | None) -> tuple[str, str]:
    found = resolve_rest(rm=flags.get("rm"), rest=flags.get("rest"), cluster=flags.get("cluster"), env=env,
                         hadoop=lambda: hadoop)
    return found.address, found.source


def test_each_address_goes_flag_env_current_cluster_hadoop_default(tmp_path: Path) -> None:
    path = write(tmp_path / "config.yaml", {"current-cluster": "prod", "clusters": {"prod": PROD, "lab": LAB}})
    none = {"SHEPHERD_CONFIG": str(tmp_path / "absent.yaml")}
    conf = {"SHEPHERD_CONFIG": str(path)}
    hadoop = "http://yarn-site:8088"
    # built-in default, then $HADOOP_CONF_DIR (REST only: the CLI's gRPC address is not a YARN property)
    assert rm_of(none) == ("127.0.0.1:7030", "default")
    assert rest_of(none) == ("http://127.0.0.1:8088", "default")
    assert rest_of(none, hadoop)[0] == hadoop
    # the current cluster beats $HADOOP_CONF_DIR
    assert rm_of(conf)[0] == PROD["rm"]
    assert rest_of(conf, hadoop)[0] == PROD["rest"]
    assert "current cluster" in rm_of(conf)[1]
    assert str(path) in rm_of(conf)[1]
    # the variables beat the current cluster
    env = {**conf, "SHEPHERD_RM": "env-rm:7030", "SHEPHERD_REST": "env-rm:8088"}
    assert rm_of(env) == ("env-rm:7030", "$SHEPHERD_RM")
    assert rest_of(env, hadoop) == ("http://env-rm:8088", "$SHEPHERD_REST")
    # the flags beat the variables
    assert rm_of(env, rm="flag-rm:7030") == ("flag-rm:7030", "--rm")
    assert rest_of(env, hadoop, rest="http://flag-rm:8088/") == ("http://flag-rm:8088", "--rest")
    # --cluster beats the variables and the current cluster, for both addresses
    assert rm_of(env, cluster="lab")[0] == LAB["rm"]
    assert rest_of(env, hadoop, cluster="lab")[0] == LAB["rest"]


def test_the_two_addresses_never_come_from_two_places(tmp_path: Path) -> None:
    path = write(tmp_path / "config.yaml", {"current-cluster": "prod", "clusters": {"prod": PROD, "lab": LAB}})
    conf = {"SHEPHERD_CONFIG": str(path)}
    # one address named by a flag or a variable: the current cluster gives not the other one either
    assert rest_of(conf, rm="other:7030") == ("http://127.0.0.1:8088", "default")
    assert rm_of(conf, rest="http://other:8088") == ("127.0.0.1:7030", "default")
    assert rest_of({**conf, "SHEPHERD_RM": "other:7030"}, "http://yarn-site:8088")[0] == "http://yarn-site:8088"
    assert rm_of({**conf, "SHEPHERD_REST": "http://other:8088"})[0] == "127.0.0.1:7030"
    # --cluster with --rm or --rest names the cluster twice
    with pytest.raises(UserConfigError, match="--cluster lab and --rm"):
        rm_of(conf, cluster="lab", rm="other:7030")
    with pytest.raises(UserConfigError, match="--cluster lab and --rest"):
        rest_of(conf, cluster="lab", rest="http://other:8088")
    with pytest.raises(UserConfigError, match=r"no cluster named 'gone' .*known: lab, prod"):
        rm_of(conf, cluster="gone")


def test_hadoop_conf_dir_is_read_only_when_nothing_else_names_the_rest_url(tmp_path: Path) -> None:
    path = write(tmp_path / "config.yaml", {"current-cluster": "prod", "clusters": {"prod": PROD}})
    asked: list[bool] = []

    def hadoop() -> str:
        asked.append(True)
        return "http://yarn-site:8088"

    resolve_rest(rm=None, rest=None, cluster=None, env={"SHEPHERD_CONFIG": str(path)}, hadoop=hadoop)
    assert asked == []


# ---------------------------------------------------------------------------- the options of the commands


def probe_app() -> typer.Typer:
    """A command with the real --rm and --rest options, under a root with --cluster as `shepherd` has it."""
    app = typer.Typer()

    @app.callback()
    def root(ctx: typer.Context, cluster: str | None = typer.Option(None, "--cluster")) -> None:
        if cluster:
            ctx.meta[CLUSTER_KEY] = cluster

    @app.command()
    def probe(rm: str | None = RM_OPT, rest: str | None = REST_OPT) -> None:
        print(json.dumps({"rm": rm, "rest": rest}))

    return app


def test_the_address_options_resolve_both_from_one_place(config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app, runner = probe_app(), CliRunner()

    def probe(*args: str) -> dict[str, str]:
        result = runner.invoke(app, [*args])
        assert result.exit_code == 0, result.output
        return dict(json.loads(result.stdout))

    assert probe("probe") == PROD  # the current cluster
    assert probe("--cluster", "lab", "probe") == LAB
    # --rm given: REST is not the current cluster's, whichever order the flags come in
    assert probe("probe", "--rm", "other:7030") == {"rm": "other:7030", "rest": "http://127.0.0.1:8088"}
    assert probe("probe", "--rest", "other:8088") == {"rm": "127.0.0.1:7030", "rest": "http://other:8088"}
    monkeypatch.setenv("SHEPHERD_RM", "env-rm:7030")
    assert probe("probe") == {"rm": "env-rm:7030", "rest": "http://127.0.0.1:8088"}
    assert probe("--cluster", "lab", "probe") == LAB  # the flag beats the variable
    twice = runner.invoke(app, ["--cluster", "lab", "probe", "--rm", "x:1"])
    assert twice.exit_code == 2
    assert twice.stderr.strip() == "error: --cluster lab and --rm both say which cluster: give one of them"


def test_the_rest_url_of_hadoop_conf_dir_comes_after_the_current_cluster(
        config_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conf = write(tmp_path / "hadoop" / "yarn-site.xml", (
        '<?xml version="1.0"?>\n<configuration><property><name>yarn.resourcemanager.webapp.address</name>'
        "<value>yarn-rm.example.com:18088</value></property></configuration>\n")).parent
    monkeypatch.setenv("HADOOP_CONF_DIR", str(conf))
    app, runner = probe_app(), CliRunner()
    assert json.loads(runner.invoke(app, ["probe"]).stdout) == PROD  # the current cluster first
    user_config.save(user_config.load(config_file).without("prod"))  # no current cluster now
    assert json.loads(runner.invoke(app, ["probe"]).stdout) == {"rm": "127.0.0.1:7030",
                                                                 "rest": "http://yarn-rm.example.com:18088"}
    monkeypatch.setenv("SHEPHERD_REST", "http://env-rm:8088")
    assert json.loads(runner.invoke(app, ["probe"]).stdout)["rest"] == "http://env-rm:8088"


def test_a_malformed_file_stops_a_command_with_one_line_and_exit_2(
        config_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    write(config_file, "clusters:\n  prod: {rm: 'prod-rm:7030'\n")
    result = CliRunner().invoke(cli.app, ["node", "list"])  # resolved by the --rm option
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {config_file}: not valid YAML")
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output
    # with --rm given, the file is still read for the credentials of that address: main() says it in one line
    monkeypatch.setattr(sys, "argv", ["shepherd", "node", "list", "--rm", "127.0.0.1:1"])
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {config_file}: not valid YAML")
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------------------- shepherd config ...


def test_config_commands_edit_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ADDRESS_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "xdg" / "shepherd" / "config.yaml"
    runner = CliRunner()

    def run(*args: str, code: int = 0) -> str:
        result = runner.invoke(cli.app, list(args))
        assert result.exit_code == code, result.output
        return result.output

    assert "no clusters" in run("config", "clusters")
    run("config", "add-cluster", "prod", "--rm", "prod-rm:7030", "--rest", "prod-rm:8088")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert yaml.safe_load(path.read_text()) == {"clusters": {"prod": PROD}}  # not current until asked
    creds = tmp_path / "lab-credentials.json"
    credentials.ensure(creds)
    run("config", "add-cluster", "lab", "--rm", "lab-rm:7030", "--rest", "http://lab-rm:8088",
        "--credentials", str(creds), "--use")
    listed = json.loads(run("config", "clusters", "-o", "json"))
    assert [(c["name"], c["current"]) for c in listed["clusters"]] == [("prod", False), ("lab", True)]
    assert listed["clusters"][1]["credentials"] == str(creds)
    table = run("config", "clusters")
    assert any(line.split()[:2] == ["*", "lab"] for line in table.splitlines())
    run("config", "use-cluster", "prod")
    assert json.loads(run("config", "which", "-o", "json"))["grpc"]["address"] == PROD["rm"]
    assert json.loads(run("--cluster", "lab", "config", "which", "-o", "json"))["rest"]["address"] == LAB["rest"]
    assert "no cluster named 'nope'" in run("config", "use-cluster", "nope", code=2)
    assert "--rm: 'lab-rm' is not a host:port address" in run("config", "add-cluster", "x", "--rm", "lab-rm",
                                                               "--rest", "x", code=2)
    run("config", "remove-cluster", "prod")
    after = yaml.safe_load(path.read_text())
    assert "current-cluster" not in after
    assert list(after["clusters"]) == ["lab"]
    # a named cluster's credentials file gives the secret for its addresses, before the variables: a secret
    # exported for another cluster is never sent to this one
    secret = credentials.load(creds).client_secret
    assert credentials.client_secret("lab-rm:7030") == secret
    assert credentials.client_secret("http://lab-rm:8088/") == secret
    assert credentials.client_secret("prod-rm:7030") is None
    monkeypatch.setenv("SHEPHERD_CLIENT_SECRET", "from-env")
    assert credentials.client_secret("lab-rm:7030") == secret
    assert credentials.client_secret("prod-rm:7030") == "from-env"
