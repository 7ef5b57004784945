"""Issue 7, acceptance 2 (files half): deploy/ passes the validators available here
and names the same commands everywhere, commands tidings' own parser accepts. The
Procfile itself is what tests/e2e/test_procfile.py runs (with honcho), so compose and
the systemd units run exactly the commands the tests run."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from honcho.environ import parse_procfile

from tests.support.polling import wait_until
from tests.support.redis_server import RedisServer, redis_binary
from tidings.cli import build_parser, main

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
UNITS = DEPLOY / "systemd"
#: Where the units expect the console script (the virtualenv of deploy/README.md).
UNIT_TIDINGS = "/opt/tidings/venv/bin/tidings"
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
            assert urlsplit(env["TIDINGS_REDIS_URL"]).hostname == "redis"
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


def acl_users() -> dict[str, list[str]]:
    """``user NAME RULE...`` lines of deploy/redis.conf, by name."""
    users = {}
    for line in (DEPLOY / "redis.conf").read_text("utf-8").splitlines():
        words = line.split()
        if words[:1] == ["user"]:
            users[words[1]] = words[2:]
    return users


def url_user(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    assert parts.username and parts.password, url
    return parts.username, parts.password


def env_file_url() -> str:
    for line in (UNITS / "tidings.env").read_text("utf-8").splitlines():
        if line.startswith("TIDINGS_REDIS_URL="):
            return line.partition("=")[2]
    raise AssertionError("tidings.env sets no TIDINGS_REDIS_URL")


#: The ACL users the shipped files name: (user, password) of tidings and of the monitor.
TIDINGS = url_user(env_file_url())
MONITOR = url_user(compose()["x-urls"]["monitor-url"])


def test_urls_in_compose_and_systemd_authenticate_as_acl_users() -> None:
    """Issue 14, acceptance 1 (files half): every shipped URL names an enabled ACL user
    with its password; anonymous access is off and protected mode stays on."""
    users = acl_users()
    assert redis_directives()["protected-mode"] == "yes"
    default = users["default"]
    assert "off" in default and "nopass" not in default and "resetpass" in default
    urls = [env_file_url(), *compose()["x-urls"].values()]
    spec = compose()
    for name, service in spec["services"].items():
        if name != "redis":
            urls.append(service["environment"]["TIDINGS_REDIS_URL"])
            check = service["healthcheck"]["test"]
            urls.append(check[check.index("--redis-url") + 1])
    for user, password in map(url_user, urls):
        rules = users[user]
        assert "on" in rules and f">{password}" in rules, (user, rules)
    assert {url_user(u)[0] for u in urls} == {"tidings", "tidings-monitor"}
    monitor = users["tidings-monitor"]
    assert "-@all" in monitor and not any(r in monitor for r in ("+@all", "+@write"))
    redis_check = " ".join(spec["services"]["redis"]["healthcheck"]["test"])
    assert f"--user {MONITOR[0]} --pass {MONITOR[1]}" in redis_check


def test_compose_has_health_checks_the_cli_accepts() -> None:
    parser = build_parser()
    for name, service in compose()["services"].items():
        test = service["healthcheck"]["test"]
        assert test[0] in ("CMD", "CMD-SHELL"), name
        if name != "redis":
            assert test[1] == "tidings", name
            parser.parse_args(test[2:])
        assert service.get("depends_on", {}).get("redis", {}).get("condition") in (
            None, "service_healthy")


def unit_settings(unit: str) -> dict[str, list[str]]:
    """Every ``Key=value`` of a unit file (a key may repeat)."""
    found: dict[str, list[str]] = {}
    for line in (UNITS / unit).read_text("utf-8").splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            found.setdefault(key, []).append(value)
    return found


@pytest.mark.parametrize("unit", ["tidings-worker@.service", "tidings-scheduler.service"])
def test_units_notify_systemd_and_are_hardened(unit: str) -> None:
    found = unit_settings(unit)
    expected = {
        "Type": ["notify"], "NotifyAccess": ["main"], "NoNewPrivileges": ["yes"],
        "ProtectSystem": ["strict"], "PrivateTmp": ["yes"], "ProtectHome": ["yes"],
        "Restart": ["on-failure"],
    }
    for key, value in expected.items():
        assert found.get(key) == value, (unit, key, found.get(key))
    assert int(found["WatchdogSec"][0]) > 0 and int(found["StartLimitBurst"][0]) > 0
    # The workdirs the units write are the ones the deployment uses (Dockerfile, README).
    assert "/srv/agents" in found["ReadWritePaths"][0].split()
    assert found["ExecStart"][0].startswith(UNIT_TIDINGS + " ")


class ShippedRedis:
    """redis-server with deploy/redis.conf as it is: only ``port`` and ``dir`` changed."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = RedisServer(directory).port
        self.out = (directory / "redis.out").open("wb")
        self.process = subprocess.Popen(
            [redis_binary(), str(DEPLOY / "redis.conf"), "--port", str(self.port),
             "--dir", str(directory)],
            stdout=self.out, stderr=subprocess.STDOUT,
        )

    def url(self, user: tuple[str, str]) -> str:
        return f"redis://{user[0]}:{user[1]}@127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.out.close()


#: A second loopback address: Redis's protected mode counts only 127.0.0.1 and ::1 as
#: local, so a client from here is "remote" to it (a DENIED without ACL users), yet
#: nothing leaves this machine and no root is needed.
REMOTE_SOURCE = "127.0.0.2"


def resp(port: int, *commands: tuple[str, ...]) -> list[bytes]:
    """Send each command from :data:`REMOTE_SOURCE`, one reply line each."""
    replies = []
    with socket.create_connection((REMOTE_SOURCE, port), timeout=5,
                                  source_address=(REMOTE_SOURCE, 0)) as sock:
        stream = sock.makefile("rb")
        for command in commands:
            parts = [f"*{len(command)}\r\n".encode()]
            for word in command:
                data = word.encode()
                parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
            sock.sendall(b"".join(parts))
            replies.append(stream.readline().rstrip())
    return replies


@pytest.fixture
def shipped(tmp_path: Path) -> Iterator[ShippedRedis]:
    server = ShippedRedis(tmp_path)
    try:

        def answers() -> bool:
            assert server.process.poll() is None, (tmp_path / "redis.out").read_text("utf-8")
            try:
                return resp(server.port, ("PING",)) == [b"-NOAUTH Authentication required."]
            except OSError:
                return False

        wait_until(answers, timeout=10, what="redis-server with deploy/redis.conf")
        yield server
    finally:
        server.stop()


@pytest.mark.redis_server
def test_shipped_redis_conf_takes_the_shipped_users_from_another_address(
    shipped: ShippedRedis, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 14, acceptance 1: from a non-loopback address an anonymous client is refused
    and the shipped credentials are accepted; tidings runs as the ``tidings`` user and
    ``tidings status`` as the read-only user, which cannot write."""
    assert resp(shipped.port, ("PING",), ("SET", "k", "v")) == [
        b"-NOAUTH Authentication required.", b"-NOAUTH Authentication required."]
    assert resp(shipped.port, ("AUTH", "default", ""))[0].startswith(b"-WRONGPASS")
    assert resp(shipped.port, ("AUTH", *TIDINGS), ("PING",), ("SET", "k", "v")) == [
        b"+OK", b"+PONG", b"+OK"]
    monitor = resp(shipped.port, ("AUTH", *MONITOR), ("EXISTS", "k"), ("SET", "k", "w"))
    assert monitor[:2] == [b"+OK", b":1"] and monitor[2].startswith(b"-NOPERM"), monitor
    assert (tmp_path / "appendonlydir").is_dir()  # the AOF is on, as shipped

    workdir = tmp_path / "agent"
    workdir.mkdir()
    tidings_url, monitor_url = shipped.url(TIDINGS), shipped.url(MONITOR)
    assert main(["agents", "add", "--workdir", str(workdir), "--json",
                 "--redis-url", tidings_url]) == 0
    assert main(["publish", "system", "--event", "{}", "--inline", "--json",
                 "--workdir", str(workdir), "--redis-url", tidings_url]) == 0
    capsys.readouterr()
    assert main(["status", "--json", "--redis-url", monitor_url]) == 0
    status = json.loads(capsys.readouterr().out)
    assert [a["agent_id"] for a in status["agents"]] != []
