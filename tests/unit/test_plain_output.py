"""Plain and table output as a new user meets it: headers that name the columns, rows for lists, whole
tables on a pipe, counted nouns that agree, and `brokers diff` showing both listings' epochs."""

from __future__ import annotations

import dataclasses
import io
import json
from dataclasses import dataclass

import pytest

from kadmin.cluster.base import BrokerListing
from kadmin.domain.kraft_registrations import Saved
from kadmin.domain.models import Broker, Registration, Stat
from kadmin.domain.text import plural
from kadmin.payloads import (
    Blocked,
    BrokersDiff,
    BrokerWait,
    CanStop,
    ClusterId,
    Drain,
    HostMapping,
    IdDecision,
    InSync,
    MaxEpoch,
    PartitionsCheck,
    QuorumCheck,
    QuorumClock,
    QuorumDescription,
    QuorumFinding,
    Reorder,
    TopicPartition,
)
from kadmin.render import views
from kadmin.render.renderer import Renderer
from kadmin.results import Result
from kadmin.services import brokers

pytestmark = pytest.mark.timeout(30)

QUORUM = QuorumDescription("MkU3OEVBNTcwNTJENDM2Qg", 1, 1, 1, 0, 0, voters=(), observers=())
CLOCK = QuorumClock("leader", 1, 0, 3000)
LAGGING = QuorumFinding("WARNING", "voter_lagging", "3002 lags")


def plain(view: views.ViewFn, data: object) -> str:
    out = io.StringIO()
    Renderer("plain", out=out, err=io.StringIO()).emit(Result(data=data), view)
    return out.getvalue()


def table(view: views.ViewFn, data: object) -> str:
    out = io.StringIO()
    Renderer("table", out=out, err=io.StringIO()).emit(Result(data=data), view)
    return out.getvalue()


# ---------------------------------------------------------------------------- ids hosts
def test_ids_hosts_without_mappings_prints_its_own_header_not_a_value_column():
    assert plain(views.ids_hosts, []).split() == ["HOST", "BROKER_ID", "REGISTERED", "REGISTERED_FROM"]
    assert "VALUE" not in table(views.ids_hosts, [])


# ---------------------------------------------------------------------------- nothing found: nothing printed
@pytest.mark.parametrize(("view", "data"), [
    (views.partitions_check, PartitionsCheck("ok", 13, findings=(), deleting=(), unseen=())),
    (views.can_stop, CanStop(3, True, 11, blocking=(), never_satisfiable=(), unseen=())),
    (views.brokers_list, []),
    (views.partitions_list, []),
    (views.ids_missing, []),
    (views.ids_gc, []),
    (views.records, []),
    (views.brokers_diff, BrokersDiff(new=(), dead=(), bounced=(), unchanged=(), old_epochs={}, new_epochs={})),
    (views.sandbox_down, {"dir": "/tmp/sb", "stopped": [], "already_gone": []}),
    (views.quorum_check, QuorumCheck("ok", findings=(), clock=CLOCK, quorum=QUORUM)),
])
def test_plain_prints_nothing_when_nothing_is_found(view, data):
    """`partitions check | wc -l` is 0 when all is well: no header line without rows (the verdict is on stderr)."""
    assert plain(view, data) == ""


def test_table_keeps_its_header_when_nothing_is_found():
    text = table(views.can_stop, CanStop(3, True, 1, blocking=(), never_satisfiable=(), unseen=()))
    assert "VERDICT" in text and "REASON" in text
    assert "REASONS" in table(views.partitions_check, PartitionsCheck("ok", 1, findings=(), deleting=(), unseen=()))


def test_plain_rows_keep_their_header():
    data = CanStop(3, False, 2, blocking=(Blocked("t", 0, "would lose its leader"),), never_satisfiable=(), unseen=())
    assert [ln.split()[:3] for ln in plain(views.can_stop, data).splitlines()] == [
        ["TOPIC", "PARTITION", "VERDICT"], ["t", "0", "blocking"]]


# ---------------------------------------------------------------------------- plain text views
@pytest.mark.parametrize(("view", "data", "text"), [
    (views.max_epoch, MaxEpoch(4294967397, broker_id=3, brokers=3), "4294967397\n"),
    (views.max_epoch, MaxEpoch(None, broker_id=None, brokers=0), "\n"),
    (views.cluster_id, ClusterId("MkU3OEVBNTcwNTJENDM2Qg", "DescribeCluster"), "MkU3OEVBNTcwNTJENDM2Qg\n"),
    (views.ids_decision, IdDecision(1001, "new-id", "h", missing_ids=(), detail="d"), "1001\n"),
    (views.brokers_wait, BrokerWait(3, "epoch_gt", met=True, epoch=304, fenced=None, waited_ms=1),
     "3\tepoch_gt\tmet\t304\n"),
    (views.brokers_wait_in_sync, InSync(3, in_sync=False, hosted_partitions=1, waiting=(TopicPartition("t", 0),),
                                        waited_ms=1, live=True, unseen=()),
     "3\tin_sync\tnot-met\t1\n"),
    (views.quorum_check, QuorumCheck("warning", (LAGGING,), CLOCK, QUORUM), "WARNING\tvoter_lagging\t3002 lags\n"),
    (views.sandbox, {"mode": "kraft", "zookeeper": None, "bootstrap_servers": "127.0.0.1:9092", "brokers": {}},
     "127.0.0.1:9092\n"),
    (views.sandbox, {"zookeeper": "127.0.0.1:2181/kafka", "brokers": {1: 10}}, "127.0.0.1:2181/kafka\n"),
])
def test_a_views_plain_text_is_printed_exactly(view, data, text):
    assert plain(view, data) == text


def _drain(**kw: object) -> Drain:
    data = Drain(drain_version=1, broker_id=1, mode="zookeeper", dry_run=False, file="/state/broker-1.json", hosted=1,
                 led_before=1, reorder=(Reorder("t", 0, (1, 2), (2, 1)),), elect=(), in_flight=(), skipped=(),
                 only_isr=(), sole_replica=(), refused=(), remaining=())
    return dataclasses.replace(data, **kw)  # type: ignore[arg-type]


def test_drain_plain_is_the_saved_file_or_the_dry_runs_reorderings():
    assert plain(views.drain, _drain()) == "/state/broker-1.json\n"
    assert plain(views.drain, _drain(dry_run=True, file=None)) == "t\t0\t1,2\t2,1\n"
    key = (TopicPartition("t", 0),)
    assert plain(views.drain, _drain(in_flight=key, skipped=key)) == "/state/broker-1.json\n"  # --force
    refused = plain(views.drain, _drain(in_flight=key))  # exit 7: no file was written, its keys are shown
    assert refused.splitlines()[0].split() == ["KEY", "VALUE"] and refused != "/state/broker-1.json\n"


def test_the_envelope_names_the_command_the_cli_stamps(capsys):
    from kadmin.cli.options import Invocation, Output

    for name, detail, said in [("brokers list", None, "brokers list"),
                               ("history report", "bounces", "history report bounces")]:
        Invocation(name, {}, None, Output.json, False).emit(Result(data=[]), views.records, detail=detail)
        assert json.loads(capsys.readouterr().out)["command"] == said


def test_ids_hosts_rows():
    data = [HostMapping("h1", 1001, registered=True, registered_from="h1"),
            HostMapping("h2", 1002, registered=False, registered_from=None)]
    lines = plain(views.ids_hosts, data).splitlines()
    assert [ln.split() for ln in lines] == [["HOST", "BROKER_ID", "REGISTERED", "REGISTERED_FROM"],
                                           ["h1", "1001", "yes", "h1"], ["h2", "1002", "no", "-"]]


# ---------------------------------------------------------------------------- sandbox down
def test_sandbox_down_is_one_row_per_process():
    data = {"dir": "/tmp/sb",
            "stopped": [{"process": "zookeeper", "pid": 41, "reason": "start time and command line match"}],
            "already_gone": [{"process": "brokers", "pid": 42, "reason": "not running"}]}
    lines = plain(views.sandbox_down, data).splitlines()
    assert lines[0].split() == ["PROCESS", "PID", "STATE", "REASON"]
    assert lines[1].split() == ["zookeeper", "41", "stopped", "start", "time", "and", "command", "line", "match"]
    assert lines[2].split() == ["brokers", "42", "already-gone", "not", "running"]
    assert "process=" not in plain(views.sandbox_down, data)  # no dict flattened into one cell


# ---------------------------------------------------------------------------- -o table on a pipe
def test_table_width_is_the_terminal_on_a_terminal_else_columns_else_unbounded():
    assert views.table_width(True, {"COLUMNS": "100"}) is None  # rich measures the terminal (and reads COLUMNS)
    assert views.table_width(False, {"COLUMNS": "132"}) == 132
    assert views.table_width(False, {}) >= 10_000
    assert views.table_width(False, {"COLUMNS": "wide"}) >= 10_000
    assert views.table_width(False, {"COLUMNS": "0"}) >= 10_000


def test_table_on_a_pipe_is_not_cut_at_80_columns(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    host = "broker-with-a-long-name." + "x" * 100 + ".example"
    data = [HostMapping(host, 1, registered=True, registered_from=host)]
    text = table(views.ids_hosts, data)
    assert host in text and "…" not in text


# ---------------------------------------------------------------------------- brokers diff
def _broker(bid: int, epoch: int) -> Broker:
    reg = Registration(5, f"b{bid}", 9092, (f"PLAINTEXT://b{bid}:9092",), {"PLAINTEXT": "PLAINTEXT"}, -1, 0)
    return Broker(bid, Stat(epoch, epoch, 0, 0, 1, 0, 0, 0x100, 10, 0, epoch), b"{}", reg)


@dataclass
class Listed:
    """A cluster whose live brokers are fixed: all `brokers diff` reads of it."""

    live: dict[int, int]

    def list_brokers(self) -> BrokerListing:
        return BrokerListing([_broker(b, e) for b, e in sorted(self.live.items())], None)


def test_brokers_diff_shows_a_dead_brokers_old_epoch_and_a_new_brokers_epoch():
    r = brokers.diff(Listed({1: 10, 3: 35, 4: 40}), {1: 10, 2: 20, 3: 30})  # type: ignore[arg-type]
    assert r.data.old_epochs == {1: 10, 2: 20, 3: 30} and r.data.new_epochs == {1: 10, 3: 35, 4: 40}
    rows = [ln.split() for ln in plain(views.brokers_diff, r.data).splitlines()]
    assert rows == [["ID", "CHANGE", "OLD_EPOCH", "NEW_EPOCH"], ["1", "unchanged", "10", "10"],
                    ["2", "dead", "20", "-"], ["3", "bounced", "30", "35"], ["4", "new", "-", "40"]]


def test_kraft_brokers_diff_has_the_same_epoch_maps():
    r = brokers.diff_registrations({1: Saved(5, "a"), 2: Saved(7, "b")}, {1: Saved(6, "c")})
    assert r.data.old_epochs == {1: 5, 2: 7} and r.data.new_epochs == {1: 6}
    rows = [ln.split() for ln in plain(views.brokers_diff, r.data).splitlines()]
    assert ["2", "dead", "7", "-"] in rows


# ---------------------------------------------------------------------------- plurals
@pytest.mark.parametrize(("n", "said"), [(0, "0 partitions"), (1, "1 partition"), (2, "2 partitions")])
def test_plural(n, said):
    assert plural(n, "partition") == said


def test_plural_with_an_irregular_form_and_several_words():
    assert plural(1, "process", "processes") == "1 process"
    assert plural(3, "process", "processes") == "3 processes"
    assert plural(1, "ZooKeeper server") == "1 ZooKeeper server"
    assert plural(3, "ZooKeeper server") == "3 ZooKeeper servers"
