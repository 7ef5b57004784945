"""Issue 7, acceptance 2 (files half): deploy/ passes the validators available here
and names the same commands everywhere, commands tidings' own parser accepts. The
Procfile itself is what tests/e2e/test_procfile.py runs (with honcho), so compose and
the systemd units run exactly the commands the tests run.

Issue 24, acceptance 10 (interfaces.md "Local trust"): deploy/redis.conf's ACL users as
shipped (port, dir and passwords set by the test) refuse what their roles must not do;
the e2e tier runs as the workers' user (tests/e2e/conftest.py)."""

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
import redis
import yaml
from honcho.environ import parse_procfile

from tests.support.polling import wait_until
from tests.support.redis_server import (
    RedisServer,
    acl_password,
    redis_binary,
    with_acl_passwords,
)
from tidings.cli import build_parser, main

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
UNITS = DEPLOY / "systemd"
#: Where the units expect the console script (the virtualenv of deploy/README.md).
UNIT_TIDINGS = "/opt/tidings/venv/bin/tidings"
#: Shell words that separate commands inside ``sh -c`` scripts.
SHELL_SEPARATORS = {";", "&&", "||", "|", "do", "done", "then", "fi", "while", "true"}


#: What deploy/.env holds in these tests: each variable compose.yaml interpolates.
COMPOSE_ENV = {
    "TIDINGS_PASSWORD": "compose-tidings-pw",
    "TIDINGS_PRODUCER_PASSWORD": "compose-producer-pw",
    "TIDINGS_MONITOR_PASSWORD": "compose-monitor-pw",
    "TIDINGS_ADMIN_PASSWORD": "compose-admin-pw",
}
#: Compose's interpolation: ``$$`` is a literal ``$``, ``${VAR:?message}`` a required value.
INTERPOLATION = re.compile(r"\$\$|\$\{(\w+)(?::\?[^}]*)?\}")


def compose_text(env: dict[str, str]) -> str:
    """compose.yaml as compose reads it with ``env`` in deploy/.env; a variable missing
    from ``env`` raises, as compose refuses to start without it."""
    text = (DEPLOY / "compose.yaml").read_text("utf-8")
    return INTERPOLATION.sub(lambda m: env[m[1]] if m[1] else "$", text)


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(compose_text(COMPOSE_ENV))
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
    # The shipped file, rendered with the passwords from the environment, then served.
    assert redis["command"][:2] == ["sh", "-c"]
    script = redis["command"][2]
    assert f" {conf_mount.split(':')[1]} > /tmp/redis.conf " in script
    assert script.endswith("exec docker-entrypoint.sh redis-server /tmp/redis.conf --bind 0.0.0.0")
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
    done = subprocess.run(
        [analyze, "verify", str(tmp_path / unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
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


#: The ACL users of deploy/redis.conf with the passwords the tests give them.
TIDINGS = ("tidings", acl_password("tidings"))
MONITOR = ("tidings-monitor", acl_password("tidings-monitor"))
PRODUCER = ("tidings-producer", acl_password("tidings-producer"))
ADMIN = ("tidings-admin", acl_password("tidings-admin"))


def placeholders() -> dict[str, str]:
    """The placeholder password of each ACL user of deploy/redis.conf."""
    found = {}
    for user, rules in acl_users().items():
        (password,) = [r[1:] for r in rules if r.startswith(">")] or [""]
        found[user] = password
    return found


def render_compose_redis_conf(tmp_path: Path, env: dict[str, str]) -> Path:
    """Run the compose Redis service's own script (up to writing its config) on the
    shipped redis.conf with ``env``; return the config Redis would load."""
    script = compose()["services"]["redis"]["command"][2]
    render = script.split(" && chown ")[0]
    render = render.replace("/usr/local/etc/redis/redis.conf", str(DEPLOY / "redis.conf"))
    rendered = tmp_path / "rendered.conf"
    render = render.replace("/tmp/redis.conf", str(rendered))
    subprocess.run(
        ["sh", "-c", render], env={"PATH": "/usr/bin:/bin", **env}, check=True, timeout=30
    )
    return rendered


def test_urls_in_compose_and_systemd_authenticate_as_acl_users(tmp_path: Path) -> None:
    """Issue 14, acceptance 1 (files half), and issue 24: every shipped URL names an
    enabled ACL user; the systemd example carries that user's placeholder (refused
    until set), compose takes every password from deploy/.env and renders the same into
    redis.conf; anonymous access is off and protected mode stays on."""
    users = acl_users()
    assert redis_directives()["protected-mode"] == "yes"
    default = users["default"]
    assert "off" in default and "nopass" not in default and "resetpass" in default
    assert all(p.startswith("change-me-") for u, p in placeholders().items() if u != "default")
    env_user, env_password = url_user(env_file_url())
    assert env_user == "tidings" and env_password == placeholders()["tidings"]

    spec = compose()
    rendered = render_compose_redis_conf(tmp_path, COMPOSE_ENV)
    assert rendered.stat().st_mode & 0o077 == 0  # umask 077: only Redis reads it
    rendered_users = {
        line.split()[1]: line.split()[2:]
        for line in rendered.read_text("utf-8").splitlines()
        if line.startswith("user ")
    }
    assert set(rendered_users) == set(users)
    urls = [*spec["x-urls"].values()]
    for name, service in spec["services"].items():
        if name != "redis":
            urls += [
                service["environment"]["TIDINGS_REDIS_URL"],
                service["environment"]["TIDINGS_MONITOR_URL"],
            ]
    for user, password in map(url_user, urls):
        assert password in COMPOSE_ENV.values()
        assert "on" in rendered_users[user] and f">{password}" in rendered_users[user]
    assert {url_user(u)[0] for u in urls} == {"tidings", "tidings-producer", "tidings-monitor"}
    assert url_user(spec["services"]["producer"]["environment"]["TIDINGS_REDIS_URL"])[0] == (
        "tidings-producer"
    )
    monitor = users["tidings-monitor"]
    assert "-@all" in monitor and not any(r in monitor for r in ("+@all", "+@write"))
    with pytest.raises(KeyError):  # compose refuses to start without the passwords
        compose_text({})


def test_no_password_on_a_command_line() -> None:
    """Issue 24: passwords come from the environment (env file or secrets), never from a
    command line that `ps` shows: the health checks included."""
    spec = compose()
    for name, service in spec["services"].items():
        words = " ".join([*service["command"], *service["healthcheck"]["test"]])
        for password in COMPOSE_ENV.values():
            assert password not in words, name
        assert "--pass" not in words and "--redis-url" not in words, name
        assert "-a " not in words, name
    redis_check = " ".join(spec["services"]["redis"]["healthcheck"]["test"])
    assert "REDISCLI_AUTH=" in redis_check and "--user tidings-monitor" in redis_check


def test_compose_pins_a_redis_with_the_2025_lua_fixes() -> None:
    """CVE-2025-49844 and its family are fixed in Redis 7.2.11 (and 7.4.6, 8.0.4, 8.2.2)."""
    image = compose()["services"]["redis"]["image"]
    name, _, tag = image.partition(":")
    assert name == "redis"
    version = tuple(int(p) for p in tag.split("."))
    assert len(version) == 3 and version[:2] == (7, 2) and version >= (7, 2, 11), image


def test_redis_conf_binds_loopback_and_shows_tls_for_remote_hosts() -> None:
    text = (DEPLOY / "redis.conf").read_text("utf-8")
    assert redis_directives()["bind"] == "127.0.0.1 ::1"
    for directive in ("tls-port", "tls-cert-file", "tls-key-file", "tls-ca-cert-file"):
        assert re.search(rf"^# {directive} \S+", text, re.M), directive


def test_compose_has_health_checks_the_cli_accepts() -> None:
    parser = build_parser()
    for name, service in compose()["services"].items():
        test = service["healthcheck"]["test"]
        assert test[0] in ("CMD", "CMD-SHELL"), name
        if name != "redis":
            assert test[0] == "CMD-SHELL", name
            words = shlex.split(test[1])
            argv = words[words.index("exec") + 1 :]
            assert argv[:3] == ["tidings", "status", "--json"], name
            parser.parse_args(argv[1:])
        assert service.get("depends_on", {}).get("redis", {}).get("condition") in (
            None,
            "service_healthy",
        )


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
        "Type": ["notify"],
        "NotifyAccess": ["main"],
        "NoNewPrivileges": ["yes"],
        "ProtectSystem": ["strict"],
        "PrivateTmp": ["yes"],
        "ProtectHome": ["yes"],
        "Restart": ["on-failure"],
    }
    for key, value in expected.items():
        assert found.get(key) == value, (unit, key, found.get(key))
    assert int(found["WatchdogSec"][0]) > 0 and int(found["StartLimitBurst"][0]) > 0
    # The workdirs the units write are the ones the deployment uses (Dockerfile, README).
    assert "/srv/agents" in found["ReadWritePaths"][0].split()
    assert found["ExecStart"][0].startswith(UNIT_TIDINGS + " ")


class ShippedRedis:
    """redis-server with deploy/redis.conf as it is: only ``port``, ``dir`` (and for the
    remote-host test ``bind``) changed, and the placeholder passwords set."""

    def __init__(self, directory: Path, *extra: str) -> None:
        self.directory = directory
        self.port = RedisServer(directory).port
        conf = directory / "redis.conf"
        lines = (DEPLOY / "redis.conf").read_text("utf-8").splitlines()
        conf.write_text("\n".join(map(with_acl_passwords, lines)) + "\n", "utf-8")
        self.out = (directory / "redis.out").open("wb")
        self.process = subprocess.Popen(
            [redis_binary(), str(conf), "--port", str(self.port), "--dir", str(directory), *extra],
            stdout=self.out,
            stderr=subprocess.STDOUT,
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


def resp(port: int, *commands: tuple[str, ...], source: str = REMOTE_SOURCE) -> list[bytes]:
    """Send each command from (and to) ``source``, one reply line each."""
    replies = []
    with socket.create_connection((source, port), timeout=5, source_address=(source, 0)) as sock:
        stream = sock.makefile("rb")
        for command in commands:
            parts = [f"*{len(command)}\r\n".encode()]
            for word in command:
                data = word.encode()
                parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
            sock.sendall(b"".join(parts))
            replies.append(stream.readline().rstrip())
    return replies


def start_shipped(directory: Path, *extra: str, source: str = "127.0.0.1") -> ShippedRedis:
    server = ShippedRedis(directory, *extra)

    def answers() -> bool:
        assert server.process.poll() is None, (directory / "redis.out").read_text("utf-8")
        try:
            return resp(server.port, ("PING",), source=source) == [
                b"-NOAUTH Authentication required."
            ]
        except OSError:
            return False

    try:
        wait_until(answers, timeout=10, what="redis-server with deploy/redis.conf")
    except BaseException:
        server.stop()
        raise
    return server


@pytest.fixture
def remote_shipped(tmp_path: Path) -> Iterator[ShippedRedis]:
    """As shipped, but also bound to :data:`REMOTE_SOURCE` (the commented remote line)."""
    server = start_shipped(tmp_path, "--bind", f"127.0.0.1 {REMOTE_SOURCE}", source=REMOTE_SOURCE)
    yield server
    server.stop()


@pytest.fixture
def shipped(tmp_path: Path) -> Iterator[ShippedRedis]:
    server = start_shipped(tmp_path)
    yield server
    server.stop()


@pytest.mark.redis_server
def test_shipped_redis_conf_takes_the_shipped_users_from_another_address(
    remote_shipped: ShippedRedis, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 14, acceptance 1: bound to a remote address (the commented line), an
    anonymous client is refused and the shipped users are accepted; tidings runs as
    ``tidings`` and ``tidings status`` as the read-only user, which cannot write."""
    port = remote_shipped.port
    assert resp(port, ("PING",), ("SET", "tidings:k", "v")) == [
        b"-NOAUTH Authentication required.",
        b"-NOAUTH Authentication required.",
    ]
    assert resp(port, ("AUTH", "default", ""))[0].startswith(b"-WRONGPASS")
    assert resp(port, ("AUTH", *TIDINGS), ("PING",), ("SET", "{a:probe}:k", "v")) == [
        b"+OK",
        b"+PONG",
        b"+OK",
    ]
    monitor = resp(
        port, ("AUTH", *MONITOR), ("HLEN", "tidings:agents"), ("SET", "{a:probe}:k", "w")
    )
    assert monitor[:2] == [b"+OK", b":0"] and monitor[2].startswith(b"-NOPERM"), monitor
    assert (tmp_path / "appendonlydir").is_dir()  # the AOF is on, as shipped

    workdir = tmp_path / "agent"
    workdir.mkdir()
    tidings_url, monitor_url = remote_shipped.url(TIDINGS), remote_shipped.url(MONITOR)
    assert (
        main(["agents", "add", "--workdir", str(workdir), "--json", "--redis-url", tidings_url])
        == 0
    )
    assert (
        main(
            [
                "publish",
                "system",
                "--event",
                "{}",
                "--inline",
                "--json",
                "--workdir",
                str(workdir),
                "--redis-url",
                tidings_url,
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["status", "--json", "--redis-url", monitor_url]) == 0
    status = json.loads(capsys.readouterr().out)
    assert [a["agent_id"] for a in status["agents"]] != []


def refused(client: redis.Redis, *command: str) -> str:
    """The error ``command`` meets (the test fails if it succeeds)."""
    try:
        client.execute_command(*command)
    except redis.ResponseError as exc:
        return str(exc)
    raise AssertionError(f"{command[0]} was allowed")


#: A script that enumerates the keyspace and deletes what it finds (issue 24 finding 7).
SCAN_AND_DEL = """local cursor = "0"
repeat
  local page = redis.call("SCAN", cursor)
  cursor = page[1]
  for _, key in ipairs(page[2]) do redis.call("DEL", key) end
until cursor == "0"
return 'wiped'"""
KEYS_AND_DEL = 'for _, k in ipairs(redis.call("KEYS", "*")) do redis.call("DEL", k) end'


@pytest.fixture
def clients(shipped: ShippedRedis) -> Iterator[dict[str, redis.Redis]]:
    made = {
        name: redis.Redis.from_url(shipped.url(user), protocol=2)
        for name, user in (("tidings", TIDINGS), ("monitor", MONITOR), ("admin", ADMIN))
    }
    yield made
    for client in made.values():
        client.close()


@pytest.mark.redis_server
def test_the_workers_user_reaches_only_tidings_keys_and_no_other_database(
    shipped: ShippedRedis, clients: dict[str, redis.Redis]
) -> None:
    """Issue 24, acceptance 10: ``tidings`` is refused SELECT, FUNCTION LOAD, a key
    outside tidings' patterns and a SCAN-and-DEL script (ACLs apply inside scripts);
    a KEYS-and-DEL script cannot reach another application's key either."""
    worker, admin = clients["tidings"], clients["admin"]
    admin.set("other-app:secret", "kept")
    assert "select" in refused(worker, "SELECT", "1")
    assert "function" in refused(
        worker, "FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('f', function() end)"
    )
    assert "keys" in refused(worker, "GET", "other-app:secret")
    assert "keys" in refused(worker, "SET", "other-app:new", "x")
    assert "scan" in refused(worker, "SCAN", "0")
    assert refused(worker, "EVAL", SCAN_AND_DEL, "0")
    assert refused(worker, "EVAL", KEYS_AND_DEL, "0")  # stops at the first foreign key
    worker.set("{a:alice}:probe", "mine")
    for command in (
        ("FLUSHALL",),
        ("CONFIG", "SET", "dir", "/tmp"),
        ("SWAPDB", "0", "1"),
        ("MOVE", "{a:alice}:probe", "1"),
        ("SCRIPT", "FLUSH"),
    ):
        assert refused(worker, *command)
    assert admin.get("other-app:secret") == b"kept"
    assert admin.get("{a:alice}:probe") == b"mine"
    assert (
        worker.execute_command("EVAL", "return redis.call('GET', KEYS[1])", "1", "{a:alice}:probe")
        == b"mine"
    )


@pytest.mark.redis_server
def test_the_monitor_reads_counts_not_content(
    shipped: ShippedRedis,
    clients: dict[str, redis.Redis],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 24, acceptance 10: ``tidings-monitor`` is refused DUMP and content reads
    (HGETALL, GET, XRANGE of agent keys) and ``tidings status`` works as it; the
    producers' user registers and publishes."""
    workdir = tmp_path / "agent"
    workdir.mkdir()
    producer_url = shipped.url(PRODUCER)
    assert (
        main(["agents", "add", "--workdir", str(workdir), "--json", "--redis-url", producer_url])
        == 0
    )
    assert (
        main(
            [
                "publish",
                "mcp.build",
                "--event",
                '{"text": "green"}',
                "--inline",
                "--json",
                "--workdir",
                str(workdir),
                "--redis-url",
                producer_url,
            ]
        )
        == 0
    )
    admin, monitor = clients["admin"], clients["monitor"]
    admin.hset("{a:alice}:inbox:items", "evt", "content")
    admin.set("{a:alice}:fp:delivered", "content")
    admin.rpush("{a:alice}:buf:mcp.build", "content")
    admin.xadd("{a:alice}:wake", {"text": "content"})
    (record,) = admin.keys("{a:*}:record")
    for command in (
        ("DUMP", record.decode()),
        ("DUMP", "{a:alice}:fp:delivered"),
        ("HGETALL", "{a:alice}:inbox:items"),
        ("HGET", "{a:alice}:inbox:items", "evt"),
        ("HSCAN", "{a:alice}:inbox:items", "0"),
        ("GET", "{a:alice}:fp:delivered"),
        ("LRANGE", "{a:alice}:buf:mcp.build", "0", "-1"),
        ("XRANGE", "{a:alice}:wake", "-", "+"),
        ("SET", "{a:alice}:x", "1"),
        ("SCAN", "0"),
        ("KEYS", "*"),
        ("EVAL", "return 1", "0"),
    ):
        assert refused(monitor, *command)
    capsys.readouterr()
    assert main(["status", "--json", "--redis-url", shipped.url(MONITOR)]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["status"] == "ok" and len(status["agents"]) == 1
    assert {q["name"] for q in status["queues"]} >= {f"tidings.host.{status['agents'][0]['host']}"}


@pytest.mark.redis_server
def test_dramatiq_maintenance_runs_as_the_workers_user(
    shipped: ShippedRedis, clients: dict[str, redis.Redis]
) -> None:
    """dramatiq's dispatch.lua lists a dead worker's ack sets with KEYS: the one reason
    ``tidings`` keeps KEYS. With a dead worker in the heartbeat set and maintenance on
    every call, its unacknowledged message goes back to the queue."""
    from tidings.store.settings import Settings
    from tidings.workers.broker import make_broker

    admin = clients["admin"]
    admin.zadd("tidings:__heartbeats__", {"dead-worker": 0})
    admin.sadd("tidings:__acks__.dead-worker.tidings.host.h1", "m1")
    admin.hset("tidings:tidings.host.h1.msgs", "m1", "{}")
    broker = make_broker(clients["tidings"], Settings(broker_heartbeat_ms=1000))
    broker.declare_queue("tidings.host.h1")
    broker.do_fetch("tidings.host.h1", 0)  # type: ignore[attr-defined]
    assert admin.lrange("tidings:tidings.host.h1", 0, -1) == [b"m1"]
    assert not admin.exists("tidings:__acks__.dead-worker.tidings.host.h1")
    assert admin.zscore("tidings:__heartbeats__", "dead-worker") is None


@pytest.mark.redis_server
def test_as_shipped_redis_listens_on_loopback_only(shipped: ShippedRedis) -> None:
    with pytest.raises(OSError):
        resp(shipped.port, ("PING",))


@pytest.mark.redis_server
def test_script_writes_survive_a_restart_from_the_aof(tmp_path: Path) -> None:
    """Redis replays the AOF as the default user and re-checks its rights at each EXEC;
    a script's writes are in the AOF as MULTI/EXEC, so a default user without rights
    (even one that is off) drops them silently at restart (redis/redis#14541)."""
    server = start_shipped(tmp_path)
    try:
        with redis.Redis.from_url(server.url(TIDINGS), protocol=2) as worker:
            script = "redis.call('SET', KEYS[1], 'a') redis.call('HSET', KEYS[2], 'f', 'b')"
            worker.execute_command("EVAL", script, "2", "{a:alice}:s", "{a:alice}:h")
            worker.set("{a:alice}:plain", "c")
    finally:
        server.stop()
    server = start_shipped(tmp_path)
    try:
        with redis.Redis.from_url(server.url(ADMIN), protocol=2) as admin:
            assert admin.get("{a:alice}:plain") == b"c"
            assert admin.get("{a:alice}:s") == b"a"
            assert admin.hget("{a:alice}:h", "f") == b"b"
    finally:
        server.stop()
