"""`quorum describe`, `cluster id`/`check-id` and `--bootstrap-controller` on real KRaft quorums, judged by
Kafka's own tools of the same version (MetadataQuorumCommand, ClusterTool) and the files StorageTool wrote.

One sandbox at a time (a module-scoped parametrized fixture: pytest runs every test on Kafka 4.3.1, stops
it, then on 3.9.1 in KRaft mode), each 3 controllers (3001-3003) + 2 brokers, started through kadmin's own
CLI. Values that move between two calls (offsets, lags, timestamps, the high watermark) are masked in the
comparisons; everything else, padding and TABs included, must be equal line by line. The controllers and the
brokers run with their own controller.quorum.fetch.timeout.ms (FETCH_TIMEOUTS: neither is Kafka's default), so
that a read of it tells whose value it got. The last test of a sandbox stops broker 2 and unregisters it.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kadmin.cluster.base import QUORUM_FETCH_TIMEOUT, QuorumSetting
from kadmin.cluster.connect import open_backend
from kadmin.config import ConnectionSettings, Sourced
from tests.support.kafka import KAFKA_3_9, KAFKA_4, kafka_home, tool, wait_for
from tests.support.sandbox import Sandbox, sandbox

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

QUORUM_TOOL = "org.apache.kafka.tools.MetadataQuorumCommand"
KAFKA_4_0 = "4.0.0"  # its MetadataQuorumCommand only (scripts/fetch-kafka.sh 4.0.0), run against the 4.3.1 quorum
CONTROLLERS = [3001, 3002, 3003]
# controller.quorum.fetch.timeout.ms in each role's server.properties (Kafka's default: 2000)
CONTROLLERS_FETCH_TIMEOUT, BROKERS_FETCH_TIMEOUT = 3000, 2500
FETCH_TIMEOUTS = {"controller": {QUORUM_FETCH_TIMEOUT: str(CONTROLLERS_FETCH_TIMEOUT)},
                  "broker": {QUORUM_FETCH_TIMEOUT: str(BROKERS_FETCH_TIMEOUT)}}


@dataclass
class Kraft:
    version: str
    sb: Sandbox
    servers: str
    controllers: str
    cluster_id: str
    tool_format: str  # kadmin's --tool-format that matches this version's tool

    def kadmin(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.sb.run(*args, timeout=180)

    def theirs(self, main: str, *args: str) -> str:
        return tool(kafka_home(self.version), main, *args).stdout

    def bootstrap(self, via: str) -> list[str]:
        return ["--bootstrap-controller", self.controllers] if via == "controller" else \
            ["--bootstrap-server", self.servers]


@pytest.fixture(scope="module", params=[KAFKA_4, KAFKA_3_9])
def kraft(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kraft]:
    version = request.param
    home = kafka_home(version)
    with sandbox(tmp_path_factory.mktemp(f"kraft-{version}") / "sb", "--kafka-home", str(home), "--mode", "kraft",
                 "--brokers", "2", properties=FETCH_TIMEOUTS) as sb:
        st = sb.status()
        assert st["kafka_version"] == version
        yield Kraft(version, sb, st["bootstrap_servers"], st["bootstrap_controllers"], st["cluster_id"],
                    "4.1" if version == KAFKA_4 else "3.9")


def agreeing(ours: Callable[[], str], theirs: Callable[[], str], mask: Callable[[str], str]) -> tuple[str, str]:
    """The two outputs, masked; asked again (both) while they disagree, e.g. across a re-election or an
    observer that had not fetched yet, until a generous deadline: then the last pair is returned."""
    last: list[tuple[str, str]] = []

    def check() -> bool:
        pair = (mask(theirs()), mask(ours()))
        last[:] = [pair]
        return pair[0] == pair[1]

    with contextlib.suppress(AssertionError):  # the caller's assertion shows the last difference
        wait_for(check, 300, "kadmin and Kafka's tool to agree", interval=1)
    return last[0]


def mask_status(text: str) -> str:
    return re.sub(r"^(HighWatermark|MaxFollowerLag|MaxFollowerLagTimeMs):( *)-?\d+$", r"\1:\2#", text, flags=re.M)


MOVING = {"LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp"}


def mask_replication(text: str) -> str:
    """Each moving cell becomes '#' over its padded width (so the column widths still count)."""
    lines = text.split("\n")
    header = lines[0].split("\t")
    moving = {i for i, h in enumerate(header) if h.strip() in MOVING}
    out = [lines[0]]
    for line in lines[1:]:
        cells = line.split("\t")
        out.append("\t".join("#" * len(c) if i in moving else c for i, c in enumerate(cells)))
    return "\n".join(out)


@pytest.mark.parametrize("via", ["controller", "server"])
def test_status_equals_kafkas_metadata_quorum_command(kraft: Kraft, via: str) -> None:
    """--status -o plain equals the same version's tool line by line: 4.3.1 leaves out the directoryId of a
    voter that has none (kadmin's default format), 3.9.1 prints `"directoryId": null` (--tool-format 3.9)."""
    def ours(*fmt: str) -> str:
        r = kraft.kadmin("quorum", "describe", "--status", *fmt, *kraft.bootstrap(via), "-o", "plain")
        assert r.returncode == 0, r.stderr
        return r.stdout

    fmt = () if kraft.version == KAFKA_4 else ("--tool-format", kraft.tool_format)
    theirs, mine = agreeing(lambda: ours(*fmt),
                            lambda: kraft.theirs(QUORUM_TOOL, *kraft.bootstrap(via), "describe", "--status"),
                            mask_status)
    assert mine == theirs
    assert f"ClusterId:              {kraft.cluster_id}\n" in mine
    # the real voters were formatted without directory ids (static controller.quorum.voters): the two
    # formats differ exactly there, and the brokers (observers) carry theirs
    voters = re.search(r"^CurrentVoters: +(.*)$", mine, re.M)
    assert voters is not None
    assert ('"directoryId": null' in voters.group(1)) == (kraft.tool_format == "3.9")
    observers_line = mine.splitlines()[7]
    assert sorted(map(int, re.findall(r'\{"id": (\d+), "directoryId": "[\w-]{22}"}', observers_line))) == [1, 2]
    # the 3.4-3.8 tool's text (its source: ids joined by ","), from the same quorum
    old = ours("--tool-format", "3.8")
    observers = [int(i) for i in re.findall(r'\{"id": (\d+)', theirs.splitlines()[7])]
    assert old.splitlines()[6:] == ["CurrentVoters:          [3001,3002,3003]",
                                    "CurrentObservers:       [" + ",".join(map(str, observers)) + "]"]
    assert mask_status(old).splitlines()[:6] == mine.splitlines()[:6]
    if kraft.version == KAFKA_4:
        # Kafka 4.0's tool (the text is the tool's, not the cluster's) prints 3.9's "directoryId": null
        theirs_40, mine_39 = agreeing(
            lambda: ours("--tool-format", "3.9"),
            lambda: tool(kafka_home(KAFKA_4_0), QUORUM_TOOL, *kraft.bootstrap(via), "describe", "--status").stdout,
            mask_status)
        assert mine_39 == theirs_40 and '"directoryId": null' in mine_39


@pytest.mark.parametrize("human", [False, True], ids=["raw", "human-readable"])
def test_replication_equals_kafkas_metadata_quorum_command(kraft: Kraft, human: bool) -> None:
    hr = ("--human-readable",) if human else ()

    def ours(*fmt: str) -> str:
        r = kraft.kadmin("quorum", "describe", "--replication", *hr, *fmt, "--bootstrap-server", kraft.servers,
                         "-o", "plain")
        assert r.returncode == 0, r.stderr
        return r.stdout

    theirs, mine = agreeing(
        ours, lambda: kraft.theirs(QUORUM_TOOL, "--bootstrap-server", kraft.servers, "describe", "--replication",
                                   *hr), mask_replication)
    assert mine == theirs
    rows = [line.split("\t") for line in mine.splitlines()[1:]]
    assert [int(r[0]) for r in rows[:3]] and sorted(int(r[0]) for r in rows) == [1, 2, *CONTROLLERS]
    assert [r[-2].strip() for r in rows] == ["Leader", "Follower", "Follower", "Observer", "Observer"]
    raw = [line.split("\t") for line in ours().splitlines()[1:]]
    if human:
        assert all(re.fullmatch(r"\d+ ms ago", c.strip()) for r in raw for c in r[4:6]), raw
    else:
        assert all(re.fullmatch(r"1\d{12}", c.strip()) for r in raw for c in r[4:6]), raw
    # --tool-format 3.8: no DirectoryId column, the rest as the newer tools (3.8's source: the same
    # prettyPrintTable over the same columns but the directory id)
    old = ours("--tool-format", "3.8").splitlines()
    assert old[0].split() == ["NodeId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp",
                              "Status"]
    assert [line.split("\t")[0] for line in old] == [line.split("\t")[0] for line in mine.splitlines()]


@pytest.mark.parametrize("via", ["controller", "server"])
def test_cluster_id_equals_cluster_tool_and_check_id_reads_storage_tools_files(
        kraft: Kraft, via: str, tmp_path: Path) -> None:
    theirs = kraft.theirs("org.apache.kafka.tools.ClusterTool", "cluster-id", *kraft.bootstrap(via))
    assert theirs == f"Cluster ID: {kraft.cluster_id}\n"
    r = kraft.kadmin("cluster", "id", *kraft.bootstrap(via), "-o", "plain")
    assert (r.returncode, r.stdout) == (0, kraft.cluster_id + "\n"), r.stderr

    # the meta.properties StorageTool format wrote in every node's log dir
    files = sorted(kraft.sb.dir.glob("*/data/meta.properties"))
    assert len(files) == 5
    r = kraft.kadmin("cluster", "check-id", *map(str, files), *kraft.bootstrap(via), "-o", "plain")
    assert r.returncode == 0, r.stderr
    assert all(line.split()[3:5] == [kraft.cluster_id, "yes"] for line in r.stdout.splitlines()[1:]), r.stdout
    assert f"all 5 files belong to cluster {kraft.cluster_id}" in r.stderr
    # a broker's file from another cluster (same text, another id) is named, exit 1
    stray = tmp_path / "meta.properties"
    other = "Zm9yZWlnbkNsdXN0ZXJJZA"
    stray.write_text(files[0].read_text().replace(kraft.cluster_id, other))
    r = kraft.kadmin("cluster", "check-id", str(files[0]), str(stray), *kraft.bootstrap(via), "-o", "plain")
    assert r.returncode == 1, r.stderr
    assert [line.split()[4] for line in r.stdout.splitlines()[1:]] == ["yes", "no"]
    assert f"{stray} has cluster.id {other}" in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("via", ["server", "controller"])
def test_the_fetch_timeout_is_the_quorum_leaders_own(kraft: Kraft, via: str) -> None:
    """controller.quorum.fetch.timeout.ms (what a roll judges a controller stopped by) is the controllers' value, not
    the brokers' nor Kafka's default: through --bootstrap-server kadmin finds the controllers at the endpoints
    DescribeQuorum v2 lists (3.9+) and asks them with the brokers' client configuration; through
    --bootstrap-controller it asks those given. The quorum leader's answer is taken."""
    flag = "bootstrap-controller" if via == "controller" else "bootstrap-server"
    settings = ConnectionSettings({flag: Sourced(kraft.controllers if via == "controller" else kraft.servers,
                                                 "flag")})

    def read() -> tuple[QuorumSetting, int] | None:
        backend = open_backend(settings, "roll")
        try:
            before = backend.quorum.describe_quorum()[0].leader_id
            got = backend.quorum.quorum_fetch_timeout()
            after = backend.quorum.describe_quorum()[0].leader_id
        finally:
            backend.close()
        return (got, after) if before == after else None  # asked again across a re-election

    got, leader = wait_for(read, 120, "a read of the fetch timeout within one quorum leadership", interval=0.5)
    assert got == QuorumSetting(QUORUM_FETCH_TIMEOUT, CONTROLLERS_FETCH_TIMEOUT,
                                f"controller {leader} (DescribeConfigs)")
    assert leader in CONTROLLERS
    # what the nodes were started with (the sandbox's server.properties): the two values kadmin must tell apart
    for role, value in (("controller", CONTROLLERS_FETCH_TIMEOUT), ("broker", BROKERS_FETCH_TIMEOUT)):
        files = sorted(kraft.sb.dir.glob(f"{role}-*/server.properties"))
        assert len(files) == (3 if role == "controller" else 2), files
        assert all(f"\n{QUORUM_FETCH_TIMEOUT}={value}\n" in f.read_text() for f in files)


def brokers(kraft: Kraft) -> dict[int, str]:
    r = kraft.sb.run("brokers", "list", "--bootstrap-server", kraft.servers, "-o", "json")
    assert r.returncode == 0, r.stderr
    return {row["id"]: row["state"] for row in json.loads(r.stdout)["data"]}


def test_controllers_do_not_list_brokers_kadmin_says_so(kraft: Kraft) -> None:
    """DescribeCluster at a controller with the BROKER endpoint type is MISMATCHED_ENDPOINT_TYPE (KIP-919): kadmin
    knows it without asking and exits 3 naming --bootstrap-server, rather than listing the controllers as brokers."""
    r = kraft.kadmin("brokers", "list", "--bootstrap-controller", kraft.controllers)
    assert r.returncode == 3 and r.stdout == "", r.stdout
    assert "MISMATCHED_ENDPOINT_TYPE" in r.stderr and "use --bootstrap-server" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert brokers(kraft) == {1: "active", 2: "active"}


def test_unregister_refuses_an_active_broker_and_removes_a_fenced_stopped_one(kraft: Kraft) -> None:
    # active: refused through the brokers (exit 7), and through the controllers, which cannot tell (exit 3)
    r = kraft.kadmin("brokers", "unregister", "2", "--bootstrap-server", kraft.servers)
    assert r.returncode == 7 and "broker 2 is active" in r.stderr, r.stderr
    r = kraft.kadmin("brokers", "unregister", "2", "--bootstrap-controller", kraft.controllers)
    assert r.returncode == 3 and "cannot check that broker 2 is not active" in r.stderr, r.stderr
    assert "--force" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert brokers(kraft) == {1: "active", 2: "active"}

    # stopped: fenced by the controller (4.3.1 lists it fenced; 3.9.1's DescribeCluster v1 omits it)
    r = kraft.sb.run("sandbox", "kill", "2")
    assert r.returncode == 0, r.stderr
    fenced = {1: "active", 2: "fenced"} if kraft.version == KAFKA_4 else {1: "active"}
    wait_for(lambda: brokers(kraft) == fenced, 180, f"broker 2 fenced ({fenced})", interval=1)
    r = kraft.kadmin("brokers", "unregister", "2", "--bootstrap-server", kraft.servers, "-o", "json")
    assert r.returncode == 0, r.stderr
    assert '"unregistered": true' in r.stdout
    assert brokers(kraft) == {1: "active"}  # gone, even from 4.3.1's fenced brokers
    # the controllers hold no registration for it any more: a second unregister is told so (exit 1)
    r = kraft.kadmin("brokers", "unregister", "2", "--bootstrap-server", kraft.servers)
    assert r.returncode == 1 and "BROKER_ID_NOT_REGISTERED" in r.stderr, r.stderr
