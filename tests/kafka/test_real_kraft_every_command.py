"""Every kadmin command on a real KRaft cluster (Kafka 4.3.1, kadmin's sandbox: 3 controllers + 3 brokers).

Issue 11's "done when": every command that works in ZooKeeper mode either works in KRaft mode or says
precisely why it cannot (exit 3, one line). The commands are not a hand-written list: the test walks
kadmin's Typer app, and CASES (the arguments each one needs, and what it must do) has to cover every
command it finds, so a new command cannot be forgotten. Each command runs once with --bootstrap-server
and once with --bootstrap-controller alone, `-o json`: it either exits as expected with kadmin's
versioned JSON on stdout, or exits with the documented code and exactly one line on stderr, no
traceback, naming the command or what it needs. Commands that take no connection options (offline:
history, sandbox, completion) run once, on this cluster's own files and processes.

Mutating commands run with --dry-run, against a throwaway object (broker 99, host `h1`), or for real
where that is harmless (drain then undrain of broker 1; the sandbox's bounce, kill and start of broker
3, then `sandbox down` last). The tests share one cluster and run in the order of the table.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kadmin.exit_codes import CHECK_COMMANDS, status
from tests.kafka.test_real_drain import new_topic
from tests.support.kafka import KAFKA_4, kafka_home, wait_for
from tests.support.sandbox import Sandbox, alive, sandbox

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

WAIT = 300.0  # deadline for observable facts on a busy machine


@dataclass(frozen=True)
class Works:
    """Exit with one of `codes` and kadmin's versioned JSON result for this command on stdout."""

    codes: tuple[int, ...] = (0,)


@dataclass(frozen=True)
class Refused:
    """Exit `code`, one line on stderr that contains every one of `says`, no traceback."""

    code: int
    says: tuple[str, ...]


Expect = Works | Refused


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]
    server: Expect  # with --bootstrap-server (or, offline, with no connection option at all)
    controller: Expect | None = None  # with --bootstrap-controller alone; None: same as server


W = Works()


def zk_only(path: str, *says: str) -> Refused:
    """A ZooKeeper-only command: exit 3, naming itself, saying why KRaft has no such thing."""
    return Refused(3, (f"{path} needs ZooKeeper mode", "KRaft", *says))


def brokers_only(path: str) -> Refused:
    """A command that reads what only brokers serve, given the controllers: exit 3, naming --bootstrap-server."""
    return Refused(3, (path, "--bootstrap-controller", "give --bootstrap-server"))


NO_DESCRIBE = Refused(3, ("the controllers (--bootstrap-controller) do not describe the brokers", "KIP-919",
                          "--bootstrap-server"))
IDS = ("static in KRaft mode", "node.id", "/brokers/hosts")

# command path -> the cases it runs. Placeholders in {braces} are filled from the module's cluster.
CASES: dict[str, list[Case]] = {
    "brokers list": [Case((), W, NO_DESCRIBE), Case(("--metadata-dir", "{mdir}"), W, W)],
    "brokers show": [Case(("1",), zk_only("brokers show", "/brokers/ids/ID", "brokers list --metadata-dir"))],
    "brokers max-epoch": [Case((), zk_only("brokers max-epoch", "DescribeCluster has none",
                                           "brokers list --metadata-dir"))],
    "brokers diff": [
        Case(("--since", "{saved}"), Refused(3, ("brokers diff needs broker epochs", "DescribeCluster",
                                                 "--metadata-dir DIR or --to FILE"))),
        Case(("--since", "{saved}", "--metadata-dir", "{mdir}"), W),
        Case(("--since", "{saved}", "--to", "{saved}"), W),
    ],
    # --timeout also bounds connecting and the first read: 1 s did not fit them at load 13 (run 12: exit 4)
    "brokers watch": [Case(("--timeout", "5"), W, NO_DESCRIBE)],
    "brokers wait": [
        Case(("1", "--registered", "--timeout", "300"), W, NO_DESCRIBE),
        Case(("1", "--unfenced", "--timeout", "300"), W, NO_DESCRIBE),
        Case(("99", "--gone", "--timeout", "300"), W, NO_DESCRIBE),
        Case(("1", "--in-sync", "--timeout", "300"), W, brokers_only("brokers wait")),
        Case(("1", "--epoch-gt", "0", "--timeout", "5"),
             Refused(3, ("brokers wait --epoch-gt needs the broker epoch", "DescribeCluster",
                         "--fenced then --unfenced", "brokers list --metadata-dir"))),
    ],
    "brokers can-stop": [Case(("1",), W, brokers_only("brokers can-stop"))],
    "brokers shutdown": [Case(("1", "--dry-run"), zk_only("brokers shutdown", "ControlledShutdown",
                                                          "brokers drain ID", "SIGTERM"))],
    "brokers unregister": [Case(("99",), Refused(1, ("UnregisterBroker", "broker 99 is not registered")),
                                Refused(3, ("cannot check that broker 99 is not active", "--bootstrap-server",
                                            "--force")))],
    "brokers drain": [Case(("1", "--dry-run"), W, brokers_only("brokers drain"))],
    "brokers undrain": [Case(("1", "--from", "{drained}", "--timeout", "300"), W, brokers_only("brokers undrain"))],
    "cluster id": [Case((), W, W)],
    "cluster check-id": [Case(("{meta}",), W, W)],
    # the controllers do not give the brokers' addresses (KIP-919): describe is partial (5), an upgrade refused (7)
    "features describe": [Case((), W, Works((5,)))],
    "features upgrade": [Case(("--release-version", "4.3", "--dry-run"), W, Works((7,)))],
    "ids resolve": [Case(("--host", "h1"), zk_only("ids resolve", *IDS))],
    "ids claim": [Case(("--host", "h1", "--dry-run"), zk_only("ids claim", *IDS))],
    "ids missing": [Case((), zk_only("ids missing", *IDS))],
    "ids hosts": [Case((), zk_only("ids hosts", *IDS))],
    "ids map": [Case(("h1", "1", "--dry-run"), zk_only("ids map", *IDS))],
    "ids unmap": [Case(("h1", "--dry-run"), zk_only("ids unmap", *IDS))],
    "ids gc": [Case((), zk_only("ids gc", *IDS))],
    "partitions list": [Case(("--topic", "{topic}"), W, brokers_only("partitions list"))],
    "partitions check": [Case((), W, brokers_only("partitions check"))],
    "quorum describe": [Case(("--status",), W, W), Case(("--replication",), W, W)],
    "quorum check": [Case((), Works((0, 1)), Works((0, 1)))],  # 1: a lag WARNING on a busy machine
    # a KRaft cluster that never migrated: NONE (no ZooKeeper given; through the brokers alone, the quorum's
    # controllers are not asked: UNKNOWN, naming --bootstrap-controller)
    "migration status": [Case((), Works((0, 3)), Works((0, 3)))],
    # roll: a plan touches nothing; a run here must restart nothing in this shared cluster: --nodes 99 (no such
    # node) stops it before its first event (the state directory gets only its lock)
    "roll plan": [Case((), W, NO_DESCRIBE)],
    "roll run": [Case(("--state", "{rollstate}", "--stop", "false", "--start", "false", "--nodes", "99"),
                      Refused(2, ("--nodes: 99: no such node",)), NO_DESCRIBE)],
    # a phase of a ZooKeeper -> KRaft migration needs -z and --bootstrap-controller too: refused before anything
    "migration roll": [Case(("--phase", "brokers-migrating", "--state", "{rollstate}", "--stop", "false", "--start",
                             "false"), Refused(2, ("give -z",)))],
    # offline: no connection options (run once, on this cluster's files and processes)
    "completion": [Case(("bash",), W)],
    "help": [Case(("connection",), W)],
    "history ingest": [Case(("{mdir}/__cluster_metadata-0", "--cluster", "every", "--out", "{events}"), W)],
    "history report": [Case(("{events}", "bounces", "--cluster", "every"), W)],
    "roll status": [Case(("--state", "{rollstate}"), Refused(2, ("--state", "no roll there")))],  # no journal
    "roll confirm": [Case(("--state", "{rollstate}", "--node", "1", "--went-down"),
                          Refused(2, ("--state", "no roll there")))],
    "roll pause": [Case(("--state", "{rollstate}"), Refused(2, ("--state", "no roll there")))],
    "roll continue": [Case(("--state", "{rollstate}"), Refused(2, ("--state", "no roll there")))],
    "sandbox status": [Case((), W)],
    "sandbox phase": [Case(("1", "kraft"), Refused(3, ("sandbox phase needs a migration sandbox",
                                                        "--mode migration")))],
    "sandbox up": [Case(("--kafka-home", "{home}", "--mode", "kraft", "--brokers", "3"), W)],  # already up: 0
    "sandbox start": [Case(("1",), Refused(1, ("broker 1 is already running",))),
                      Case(("3",), W)],  # after `sandbox kill 3`
    "sandbox kill": [Case(("3",), W)],
    "sandbox bounce": [Case(("2",), W)],
    "sandbox down": [Case((), W)],
}
# the offline commands' order matters: kill 3 before start 3, everything before down
OFFLINE_ORDER = ["completion", "help", "history ingest", "history report", "roll status", "roll confirm",
                 "roll pause", "roll continue",
                 "sandbox status", "sandbox phase", "sandbox up", "sandbox kill", "sandbox start", "sandbox bounce",
                 "sandbox down"]


def command_tree() -> dict[str, list[str]]:
    """Every leaf command of kadmin's Typer app -> its option names, by the walk the commands reference and
    the completion scripts use (kadmin/cli/help.py), not listed by hand."""
    from kadmin.cli.help import leaves, option_names, root_command

    return {path: option_names(cmd) for path, cmd in leaves(root_command())}


TREE = command_tree()
ONLINE = [p for p in CASES if p in TREE and "--bootstrap-server" in TREE[p]]
OFFLINE = [p for p in OFFLINE_ORDER if p in TREE]


def variants(paths: list[str]) -> list[Any]:
    return [pytest.param(p, i, id=f"{p} {' '.join(c.args)}".strip()) for p in paths for i, c in enumerate(CASES[p])]


# ------------------------------------------------------------------------------------------------ the cluster
@dataclass
class Kraft:
    sb: Sandbox
    server: str
    controller: str
    values: dict[str, str]


@pytest.fixture(scope="module")
def kraft(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kraft]:
    home = kafka_home(KAFKA_4)
    tmp = tmp_path_factory.mktemp("kraft-every")
    with sandbox(tmp / "sb", "--kafka-home", str(home), "--mode", "kraft", "--brokers", "3") as sb:
        sb.env["XDG_STATE_HOME"] = str(tmp / "state")
        st = sb.status()
        k = Kraft(sb, st["bootstrap_servers"], st["bootstrap_controllers"], {})
        topic = new_topic(k.server, {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}, prefix="every")
        try:
            wait_for(lambda: in_sync(k, topic), WAIT, f"{topic} created, every replica in sync", interval=0.5)
        except AssertionError as e:
            raise AssertionError(f"{e} (last seen: {LAST_SEEN[0]})") from None
        mdir = sb.dir / "controller-3001" / "data"
        saved = tmp / "saved.json"
        r = sb.run("brokers", "list", "--metadata-dir", str(mdir), "-o", "json")
        assert r.returncode == 0, r.stderr
        saved.write_text(r.stdout)
        drained = tmp / "drained.json"  # a real drain, for undrain to restore
        r = sb.run("brokers", "drain", "1", "--save", str(drained), "--timeout", str(WAIT),
                   "--bootstrap-server", k.server, "-o", "json")
        assert r.returncode == 0, r.stderr
        k.values = {"mdir": str(mdir), "saved": str(saved), "drained": str(drained), "topic": topic,
                    "meta": str(sb.dir / "broker-1" / "data" / "meta.properties"), "events": str(tmp / "events"),
                    "home": str(home), "rollstate": str(tmp / "roll")}
        yield k


LAST_SEEN: list[str] = [""]  # what the last in_sync poll saw, for the timeout message


def in_sync(k: Kraft, topic: str) -> bool:
    r = k.sb.run("partitions", "list", "--topic", topic, "--bootstrap-server", k.server, "-o", "json")
    rows = json.loads(r.stdout)["data"] if r.returncode == 0 else []
    LAST_SEEN[0] = (f"exit {r.returncode}: {r.stderr.strip()[-300:]}" if r.returncode else
                    "; ".join(f"p{p['partition']} leader {p['leader']} isr {p['isr']}" for p in rows))
    return len(rows) == 3 and all(sorted(p["isr"]) == [1, 2, 3] and p["leader"] >= 0 for p in rows)


def run_case(k: Kraft, path: str, case: Case, connection: tuple[str, ...]) -> tuple[int, str, str]:
    args = [a.format(**k.values) for a in case.args]
    out = ("-o", "json") if "--output" in TREE[path] else ()
    r = k.sb.run(*path.split(), *args, *connection, *out)
    return r.returncode, r.stdout, r.stderr


def names(command: str, path: str) -> bool:
    """The JSON's `command` is the command's path (`history report` adds the report's kind)."""
    return command == path or command.startswith(path + " ")


def check(path: str, expect: Expect, code: int, stdout: str, stderr: str) -> None:
    assert "Traceback" not in stderr and "Traceback" not in stdout, stderr
    assert "internal error" not in stderr, stderr
    json_out = "--output" in TREE[path]
    if isinstance(expect, Works):
        assert code in expect.codes, f"{path}: exit {code}: {stderr}"
        if not json_out:
            assert stdout.strip(), f"{path}: printed nothing"
            return
        doc = json.loads(stdout)
        assert doc["kadmin_result_version"] == 2 and names(doc["command"], path), doc
        assert doc["exit_code"] == code and isinstance(doc["status"], str) and isinstance(doc["errors"], list), doc
        return
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert code == expect.code, f"{path}: exit {code}, wanted {expect.code}: {stderr}"
    assert len(lines) == 1, f"{path}: wanted one line on stderr, got {lines}"
    line = lines[0]
    assert line.startswith("kadmin: error: "), line
    for s in expect.says:
        assert s in line, f"{path}: {s!r} not in {line!r}"
    if code == 3:  # precise: names the command or what it needs
        assert path in line or "--bootstrap-server" in line or "--metadata-dir" in line, line
        assert "this command" not in line, line
    if json_out:
        doc = json.loads(stdout)
        assert doc["kadmin_result_version"] == 2 and names(doc["command"], path), doc
        assert doc["status"] == status(code, check=path in CHECK_COMMANDS), doc
        assert doc["exit_code"] == code and doc["errors"][0]["message"] == line.removeprefix("kadmin: error: ")


# ------------------------------------------------------------------------------------------------ the tests
def test_the_table_covers_every_command_of_the_app() -> None:
    """A command added to kadmin without a row here fails this test (the app is walked, not listed)."""
    missing, stale = sorted(set(TREE) - set(CASES)), sorted(set(CASES) - set(TREE))
    assert not missing and not stale, f"commands without a row: {missing}; rows without a command: {stale}"
    offline = {p for p in TREE if "--bootstrap-server" not in TREE[p]}
    assert offline == set(OFFLINE), offline  # every offline command takes no connection option at all
    assert all("--bootstrap-controller" in TREE[p] for p in ONLINE)


@pytest.mark.parametrize(("path", "i"), variants(ONLINE))
def test_with_bootstrap_server(kraft: Kraft, path: str, i: int) -> None:
    case = CASES[path][i]
    code, out, err = run_case(kraft, path, case, ("--bootstrap-server", kraft.server))
    check(path, case.server, code, out, err)


@pytest.mark.parametrize(("path", "i"), variants(ONLINE))
def test_with_bootstrap_controller_alone(kraft: Kraft, path: str, i: int) -> None:
    case = CASES[path][i]
    code, out, err = run_case(kraft, path, case, ("--bootstrap-controller", kraft.controller))
    check(path, case.server if case.controller is None else case.controller, code, out, err)


def test_undrain_restored_what_drain_saved(kraft: Kraft) -> None:
    """The real drain (fixture) and undrain (table) round trip: broker 1 leads its preferred partitions again."""
    saved = json.loads(Path(kraft.values["drained"]).read_text())
    topic = kraft.values["topic"]

    def restored() -> bool:
        r = kraft.sb.run("partitions", "list", "--topic", topic, "--bootstrap-server", kraft.server, "-o", "json")
        rows = json.loads(r.stdout)["data"] if r.returncode == 0 else []
        return bool(rows) and all(p["leader"] == p["replicas"][0] for p in rows) and \
            any(p["leader"] == 1 for p in rows)

    assert saved  # the file drain wrote
    wait_for(restored, WAIT, "broker 1 leads its preferred partitions again", interval=0.5)


# Issue 22: the wrong kind of node behind an address flag is named, with the fix (exit 3, one line)
GIVEN_CONTROLLERS = [("brokers can-stop", ("1",)), ("partitions check", ()), ("partitions list", ()),
                     ("brokers wait", ("1", "--in-sync", "--timeout", "30")), ("brokers drain", ("1", "--dry-run")),
                     ("brokers list", ())]
GIVEN_BROKERS = [("quorum check", ()), ("quorum describe", ("--status",)), ("cluster id", ())]


@pytest.mark.parametrize(("path", "args"), GIVEN_CONTROLLERS, ids=[p for p, _ in GIVEN_CONTROLLERS])
def test_the_controllers_given_as_bootstrap_servers(kraft: Kraft, path: str, args: tuple[str, ...]) -> None:
    code, out, err = run_case(kraft, path, Case(args, W), ("--bootstrap-server", kraft.controller))
    check(path, Refused(3, ("is a controller", "give the brokers' addresses", "--bootstrap-controller")),
          code, out, err)


@pytest.mark.parametrize(("path", "args"), GIVEN_BROKERS, ids=[p for p, _ in GIVEN_BROKERS])
def test_the_brokers_given_as_bootstrap_controllers(kraft: Kraft, path: str, args: tuple[str, ...]) -> None:
    code, out, err = run_case(kraft, path, Case(args, W), ("--bootstrap-controller", kraft.server))
    check(path, Refused(3, ("--bootstrap-controller", "is a broker", "give the controllers' addresses")),
          code, out, err)


@pytest.mark.parametrize(("path", "i"), variants(OFFLINE))
def test_offline_commands(kraft: Kraft, path: str, i: int) -> None:
    case = CASES[path][i]
    pids = kraft.sb.pids()  # the processes the sandbox started (`sandbox down` removes its state file)
    code, out, err = run_case(kraft, path, case, ())
    check(path, case.server, code, out, err)
    if path == "sandbox start" and code == 0 or path == "sandbox bounce":
        broker = case.args[0]
        r = kraft.sb.run("brokers", "wait", broker, "--unfenced", "--timeout", str(WAIT),
                         "--bootstrap-server", kraft.server)
        assert r.returncode == 0, r.stderr
    if path == "sandbox down":
        assert pids
        wait_for(lambda: not [p for p in pids if alive(p)], WAIT, "every process the sandbox started gone")
