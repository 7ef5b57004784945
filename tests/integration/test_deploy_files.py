"""Issue 7, acceptance 2 (files half): deploy/ passes the validators available here
and names the same commands everywhere, commands tidings' own parser accepts. The
Procfile itself is what tests/e2e/test_procfile.py runs (with honcho), so compose and
the systemd units run exactly the commands the tests run."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from honcho.environ import parse_procfile

from tests.support.polling import wait_until
from tests.support.redis_server import RedisServer, redis_binary
from tidings.cli import build_parser

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
UNITS = DEPLOY / "systemd"
#: Where the units expect the console script (a system-wide ``pip install``).
UNIT_TIDINGS = "/usr/local/bin/tidings"
#: Shell words that separate commands inside ``sh -c`` scripts.
SHELL_SEPARATORS = {";", "&&", "||", "|", "do", "done", "then", "fi", "while", "true"}


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text("utf-8"))
    return loaded


def tidings_commands(argv: list[str]) -> list[list[str]]:
    """The ``tidings`` invocations in a container command (plain or ``sh -c``)."""
    if argv[:2] == ["sh", "-c"]:
        lexer = shlex.shlex(argv[2], posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        commands: list[list[str]] = [[]]
        for word in lexer:
            if word in SHELL_SEPARATORS:
                commands.append([])
            else:
                commands[-1].append(word)
        return [c[1:] for c in commands if c[:1] == ["tidings"]]
    assert argv[0] == "tidings", argv
    return [argv[1:]]


def unit_command(unit: str) -> list[str]:
    text = (UNITS / unit).read_text("utf-8")
    (line,) = [ln for ln in text.splitlines() if ln.startswith("ExecStart=")]
    argv = shlex.split(line.removeprefix("ExecStart="))
    assert argv[0] == UNIT_TIDINGS
    return argv[1:]


def procfile_commands() -> dict[str, list[str]]:
    procfile = parse_procfile((DEPLOY / "Procfile").read_text("utf-8"))
    commands = {}
    for name, process in procfile.processes.items():
        argv = shlex.split(process)
        assert argv[0] == "tidings"
        commands[name] = argv[1:]
    return commands


def test_compose_file_has_the_services_and_settings_it_needs() -> None:
    spec = compose()
    services = spec["services"]
    assert set(services) == {"redis", "worker", "scheduler", "producer"}
    declared_volumes = set(spec.get("volumes") or {})
    for name, service in services.items():
        assert "image" in service or "build" in service, name
        assert isinstance(service["command"], list) and service["command"], name
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert source.startswith("./") or source in declared_volumes, (name, volume)
        for dependency in service.get("depends_on", {}):
            assert dependency in services, (name, dependency)
        if name != "redis":
            assert service["build"]["dockerfile"] == "deploy/Dockerfile"
            env = service["environment"]
            assert env["TIDINGS_REDIS_URL"].startswith("redis://redis:")
            assert env["TIDINGS_HOST"]
    redis = services["redis"]
    conf_mount = next(v for v in redis["volumes"] if v.startswith("./redis.conf:"))
    assert redis["command"] == ["redis-server", conf_mount.split(":")[1]]
    assert (DEPLOY / "redis.conf").is_file()


def test_dockerfile_copies_only_what_exists() -> None:
    root = DEPLOY.parent
    for line in (DEPLOY / "Dockerfile").read_text("utf-8").splitlines():
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (root / source).exists(), source


def test_procfile_compose_and_units_run_the_same_commands() -> None:
    procfile = procfile_commands()
    services = compose()["services"]
    assert procfile == {
        "worker": ["worker", "--processes", "2"],
        "scheduler": ["scheduler"],
    }
    for name in ("worker", "scheduler"):
        assert tidings_commands(services[name]["command"]) == [procfile[name]]
    assert unit_command("tidings-worker@.service") == procfile["worker"]
    assert unit_command("tidings-scheduler.service") == procfile["scheduler"]


def test_every_deploy_command_parses_with_the_tidings_cli() -> None:
    commands = [*procfile_commands().values()]
    for service in compose()["services"].values():
        if service["command"][0] != "redis-server":
            commands += tidings_commands(service["command"])
    commands += [unit_command(u) for u in ("tidings-worker@.service", "tidings-scheduler.service")]
    assert any(c[0] == "publish" for c in commands), "the example producer publishes"
    parser = build_parser()
    for argv in commands:
        try:
            parser.parse_args(argv)
        except SystemExit:
            pytest.fail(f"tidings {shlex.join(argv)} does not parse")


@pytest.mark.parametrize("unit", ["tidings-worker@.service", "tidings-scheduler.service"])
def test_systemd_units_pass_systemd_analyze_verify(unit: str, tmp_path: Path) -> None:
    """``verify`` demands an existing executable, so a copy points ExecStart at this
    environment's ``tidings``; everything else is verified as shipped."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    tidings_bin = Path(sys.executable).parent / "tidings"
    assert tidings_bin.is_file()
    text = (UNITS / unit).read_text("utf-8")
    assert re.search(r"^Restart=on-failure$", text, re.M)
    assert re.search(r"^EnvironmentFile=/etc/tidings/tidings.env$", text, re.M)
    (tmp_path / unit).write_text(text.replace(UNIT_TIDINGS, str(tidings_bin)), "utf-8")
    done = subprocess.run([analyze, "verify", str(tmp_path / unit)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def redis_directives() -> dict[str, str]:
    directives = {}
    for line in (DEPLOY / "redis.conf").read_text("utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.strip().partition(" ")
            directives[key] = value
    return directives


def test_redis_conf_turns_on_aof_every_second_and_explains_always() -> None:
    directives = redis_directives()
    assert directives["appendonly"] == "yes"
    assert directives["appendfsync"] == "everysec"
    assert directives["maxmemory-policy"] == "noeviction"
    assert re.search(r"^#.*\balways\b", (DEPLOY / "redis.conf").read_text("utf-8"), re.M)


@pytest.mark.redis_server
def test_redis_server_accepts_the_shipped_conf(tmp_path: Path) -> None:
    """The real validator: redis-server starts with deploy/redis.conf (port, bind and
    data dir overridden for the test) and reports the durability settings."""
    server = RedisServer(tmp_path)
    server.process = subprocess.Popen(
        [redis_binary(), str(DEPLOY / "redis.conf"),
         "--port", str(server.port), "--bind", "127.0.0.1", "--dir", str(tmp_path),
         "--logfile", str(tmp_path / "redis.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:

        def answers() -> bool:
            assert server.process is not None and server.process.poll() is None, \
                (tmp_path / "redis.log").read_text("utf-8")
            try:
                with server.client() as c:
                    return bool(c.ping())
            except redis.ConnectionError:
                return False

        wait_until(answers, timeout=10, what="redis-server with deploy/redis.conf")
        with server.client(decode_responses=True) as c:
            assert c.config_get("appendonly") == {"appendonly": "yes"}
            assert c.config_get("appendfsync") == {"appendfsync": "everysec"}
            assert c.config_get("maxmemory-policy") == {"maxmemory-policy": "noeviction"}
    finally:
        server.stop()
