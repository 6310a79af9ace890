"""Issue 9 §1 against a real ZooKeeper: verdicts that cannot be wrong in the dangerous direction.

A znode that cannot be read blocks `can-stop`, the `shutdown` gate and `partitions check`; an unknown
broker id is an error; an absurd value is malformed data (never an internal error); a garbage host
mapping is reported at once.
"""

from __future__ import annotations

import json

import pytest

from kadmin.sandbox.fleet import BrokerSpec

pytestmark = pytest.mark.integration

HUGE = "9" * 5000  # beyond Python's 4300-digit int-conversion limit
DEEP = "[" * 200_000 + "]" * 200_000


def state(leader, isr):
    return json.dumps({"version": 1, "leader": leader, "leader_epoch": 0, "controller_epoch": 1, "isr": isr},
                      separators=(",", ":")).encode()


def put_topic(kz, name, partitions, min_isr=None, raw_topic=None):
    doc = {"version": 3, "partitions": {str(p): r for p, r in partitions.items()}, "adding_replicas": {},
           "removing_replicas": {}}
    kz.create(f"/brokers/topics/{name}", raw_topic if raw_topic is not None else json.dumps(doc).encode())
    for p, replicas in partitions.items():
        kz.create(f"/brokers/topics/{name}/partitions/{p}/state", state(replicas[0], replicas), makepath=True)
    if min_isr is not None:
        raw = min_isr if isinstance(min_isr, bytes) else json.dumps(
            {"version": 1, "config": {"min.insync.replicas": min_isr}}).encode()
        kz.create(f"/config/topics/{name}", raw)


@pytest.fixture
def three(fleet, kz):
    """Brokers 1-3 live; topic `good` on all three with min ISR 2: any single broker can stop."""
    for i in (1, 2, 3):
        fleet.register(BrokerSpec(i), catch_up=False)
    put_topic(kz, "good", {0: [1, 2, 3]}, min_isr="2")
    return kz


def no_bare_constants(text):
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in JSON output"))


def assert_gates_closed(run, broker, znode):
    """can-stop exit 1 naming the znode in errors; shutdown's gate refuses; check CRITICAL."""
    code, doc, err = run.json("brokers", "can-stop", str(broker))
    assert code == 1, err
    assert doc["data"]["safe"] is False
    assert any(znode in e["message"] for e in doc["errors"]), doc["errors"]
    assert znode in err and "cannot stop safely" in err
    r = run("brokers", "shutdown", str(broker), "--dry-run")
    assert r.exit_code == 7 and "can-stop: NOT safe" in r.stderr and znode in r.stderr, r.stderr
    r = run("brokers", "shutdown", str(broker))
    assert r.exit_code == 7 and "refused" in r.stderr, r.stderr
    code, doc, err = run.json("partitions", "check")
    assert code == 2 and doc["data"]["status"] == "critical", err
    assert any(znode in e["message"] for e in doc["errors"])
    assert "CRITICAL" in err


# ------------------------------------------------------------------ unreadable data blocks the verdicts
def test_baseline_every_broker_can_stop(run, three):
    assert run("brokers", "can-stop", "1").exit_code == 0
    assert run("partitions", "check").exit_code == 0


def test_an_unparsable_topic_znode_blocks_every_verdict(run, three):
    put_topic(three, "broken", {0: [2, 3]}, raw_topic=b'{"version":3,"partitions":')
    assert_gates_closed(run, 1, "/brokers/topics/broken")
    _, doc, _ = run.json("partitions", "check")
    assert {"topic": "broken", "partition": None, "reasons": [doc["data"]["findings"][0]["reasons"][0]]} in \
        doc["data"]["findings"]


@pytest.mark.parametrize("config", [b"{nope", "two", "1e999", "nan", "0", HUGE,
                                    b'{"version":1,"config":{"min.insync.replicas":' + DEEP.encode() + b"}}"])
def test_an_unreadable_min_isr_never_falls_back_to_1(run, three, config):
    # RF 2 with ISR 2: safe with min ISR 1, unsafe with min ISR 2: the value must be known
    put_topic(three, "t", {0: [1, 2]}, min_isr=config)
    assert_gates_closed(run, 1, "/config/topics/t")
    assert run("brokers", "can-stop", "3").exit_code == 0  # 3 hosts nothing of t: its verdict stands


def test_an_unreadable_state_blocks_its_replicas(run, three):
    put_topic(three, "s", {0: [1, 2]})
    three.set("/brokers/topics/s/partitions/0/state", DEEP.encode())
    assert_gates_closed(run, 2, "/brokers/topics/s/partitions/0/state")
    assert run("brokers", "can-stop", "3").exit_code == 0


# ------------------------------------------------------------------ unknown broker ids
def test_an_unknown_broker_is_an_error(run, three):
    code, doc, err = run.json("brokers", "can-stop", "99")
    assert code == 1 and doc["status"] == "condition_not_met" and doc["errors"][0]["code"] == "unknown_broker"
    assert "no broker 99" in err and "can stop" not in err
    r = run("brokers", "shutdown", "99", "--epoch", "5", "--dry-run")
    assert r.exit_code == 1 and "no broker 99" in r.stderr
    r = run("brokers", "shutdown", "99", "--epoch", "5", "--force")
    assert r.exit_code == 1 and "no broker 99" in r.stderr
    r = run("brokers", "show", "99")
    assert r.exit_code == 1 and "not registered" in r.stderr
    r = run("brokers", "wait", "99", "--in-sync", "--timeout", "5")
    assert r.exit_code == 1 and "no broker 99" in r.stderr
    r = run("partitions", "list", "--broker", "99")
    assert r.exit_code == 1 and "no broker 99" in r.stderr


def test_a_broker_that_is_down_but_assigned_is_not_unknown(run, three):
    put_topic(three, "t4", {0: [1, 4]})
    three.set("/brokers/topics/t4/partitions/0/state", state(1, [1]))
    code, doc, err = run.json("brokers", "can-stop", "4")
    assert code == 0 and doc["data"]["hosted_partitions"] == 1 and "not registered now" in err
    # --timeout also bounds connecting and the first look: 2 s leaves a loaded machine time for them (at load 17, 0.3 s
    # ran out before the first look: exit 4, out of time, not the 1 of a wait that was never met)
    r = run("brokers", "wait", "4", "--in-sync", "--timeout", "2")
    assert r.exit_code == 1 and "timed out" in r.stderr
    # waiting for a broker that is not registered yet is what --registered and --epoch-gt are for
    r = run("brokers", "wait", "99", "--registered", "--timeout", "2")
    assert r.exit_code == 1 and "timed out" in r.stderr and "broker 99 is not registered" in r.stderr
    r = run("brokers", "wait", "99", "--epoch-gt", "0", "--timeout", "2")
    assert r.exit_code == 1 and "timed out" in r.stderr


@pytest.mark.parametrize("bad", ["-5", str(2**40), str(2**31)])
@pytest.mark.parametrize("argv", [
    ["brokers", "show", "--", "{id}"], ["brokers", "can-stop", "--", "{id}"], ["brokers", "shutdown", "--", "{id}"],
    ["brokers", "wait", "--registered", "--", "{id}"], ["brokers", "unregister", "--yes", "--", "{id}"],
    ["ids", "map", "--", "h", "{id}"], ["partitions", "list", "--broker", "{id}"],
    ["ids", "resolve", "--host", "h", "--config-id", "{id}"],
])
def test_impossible_broker_ids_are_usage_errors(run_nozk, argv, bad):
    r = run_nozk(*[bad if a == "{id}" else a for a in argv])
    assert r.exit_code == 2, (r.exit_code, r.stderr)
    assert "not a broker id" in r.stderr


# ------------------------------------------------------------------ absurd values are malformed data
@pytest.mark.parametrize("data", [
    b'{"version":5,"host":"h","port":' + HUGE.encode() + b',"endpoints":[]}',
    DEEP.encode(),
    b'{"version":5,"host":"h","port":1,"endpoints":[],"features":{"f":{"max_version":NaN}}}',
    b'{"version":5,"host":"h","port":1,"endpoints":[],"timestamp":' + HUGE.encode() + b"}",
])
def test_absurd_registration_is_an_invalid_row(run, fleet, data):
    fleet.register(BrokerSpec(1), catch_up=False)
    fleet.register(BrokerSpec(2, data=data), catch_up=False)
    r = run("brokers", "list", "-o", "json")
    assert r.exit_code == 5, r.stderr
    doc = no_bare_constants(r.stdout)
    assert [(b["id"], b["state"]) for b in doc["data"]] == [(1, "registered"), (2, "invalid")]
    assert "/brokers/ids/2" in doc["errors"][0]["message"] and len(r.stderr) < 2000
    r = run("brokers", "show", "2", "-o", "json")
    assert r.exit_code == 5 and no_bare_constants(r.stdout)["data"]["state"] == "invalid"
    assert run("brokers", "max-epoch").exit_code == 5


def test_absurd_topic_state_and_controller(run, fleet, kz):
    fleet.register(BrokerSpec(1), catch_up=False)
    put_topic(kz, "a", {0: [1]})
    put_topic(kz, "b", {0: [1]}, raw_topic=b'{"version":3,"partitions":{"0":[' + HUGE.encode() + b"]}}")
    kz.set("/brokers/topics/a/partitions/0/state", b'{"version":1,"leader":' + HUGE.encode() + b"}")
    code, doc, err = run.json("partitions", "list")
    assert code == 5 and "internal error" not in err
    assert {e["message"].split(":")[0] for e in doc["errors"]} == {"/brokers/topics/b",
                                                                    "/brokers/topics/a/partitions/0/state"}
    assert run("partitions", "check").exit_code == 2
    kz.set("/controller", DEEP.encode())
    r = run("brokers", "list")
    assert r.exit_code == 5 and "/controller" in r.stderr


def test_absurd_since_file_is_a_usage_error(run, fleet, tmp_path):
    fleet.register(BrokerSpec(1), catch_up=False)
    for i, content in enumerate([f'[{{"id":1,"epoch":{HUGE}}}]', DEEP, '[{"id":1,"epoch":NaN}]']):
        f = tmp_path / f"saved{i}.json"
        f.write_text(content)
        r = run("brokers", "diff", "--since", str(f))
        assert r.exit_code == 2 and r.stderr.startswith("kadmin: error: --since"), r.stderr
    f = tmp_path / "binary.json"
    f.write_bytes(b"\xff\xfe[")
    r = run("brokers", "diff", "--since", str(f))
    assert r.exit_code == 2 and "--since" in r.stderr


def test_non_canonical_broker_id_children_are_invalid(run, fleet, kz):
    fleet.register(BrokerSpec(2), catch_up=False)
    reg = kz.get("/brokers/ids/2")[0]
    for name in ("02", "1_0", "٣"):
        kz.create(f"/brokers/ids/{name}", reg)
    code, doc, err = run.json("brokers", "list")
    assert code == 5
    assert [b["id"] for b in doc["data"]] == [2]  # never 2 twice, never a phantom 10 or 3
    messages = " ".join(e["message"] for e in doc["errors"])
    for name in ("02", "1_0", "٣"):
        assert f"/brokers/ids/{name}: not a broker id" in messages
    assert run("brokers", "max-epoch").exit_code == 5
    assert run("partitions", "check").exit_code == 2


# ------------------------------------------------------------------ garbage host mappings
@pytest.mark.parametrize("garbage", [b"{nope", b'{"version":0,"broker.id":' + HUGE.encode() + b"}", DEEP.encode()])
def test_a_garbage_host_mapping_is_reported_at_once(run, fleet, kz, garbage):
    fleet.register(BrokerSpec(1), catch_up=False)
    kz.create("/brokers/hosts/h", garbage, makepath=True)
    r = run("ids", "claim", "--host", "h")
    assert r.exit_code == 5 and "/brokers/hosts/h holds an invalid mapping" in r.stderr, r.stderr
    assert "contention" not in r.stderr  # at once: not retried as if another claim kept winning the race
    r = run("ids", "resolve", "--host", "h")
    assert r.exit_code == 5 and "invalid mapping" in r.stderr
    r = run("ids", "map", "h", "5")
    assert r.exit_code == 5 and "--force replaces it" in r.stderr
    assert kz.get("/brokers/hosts/h")[0] == garbage
    r = run("ids", "map", "h", "5", "--force")
    assert r.exit_code == 0, r.stderr
    assert json.loads(kz.get("/brokers/hosts/h")[0]) == {"version": 0, "broker.id": 5}
    assert run("ids", "claim", "--host", "h").stdout == "5\n"


def test_unmap_deletes_a_garbage_mapping(run, fleet, kz):
    fleet.register(BrokerSpec(1), catch_up=False)
    kz.create("/brokers/hosts/h", b"{nope", makepath=True)
    r = run("ids", "unmap", "h", "--dry-run")
    assert r.exit_code == 0 and "would delete" in r.stderr and "invalid mapping" in r.stderr
    assert kz.exists("/brokers/hosts/h")
    r = run("ids", "unmap", "h")
    assert r.exit_code == 0 and "invalid mapping" in r.stderr and not kz.exists("/brokers/hosts/h")


# ------------------------------------------------------------------------------------------------ issue 34 §1
def piped(zk: str, *args: str, reader: str = "true") -> tuple[int, int, str]:
    """`kadmin ARGS | READER` in a real pipe (bash, pipefail): (kadmin's exit code, the pipeline's, stderr)."""
    import os
    import subprocess
    import sys

    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KADMIN_")}, "KADMIN_ZOOKEEPER": zk}
    line = " ".join([sys.executable, "-m", "kadmin", *args])
    r = subprocess.run(["bash", "-c", f"set -o pipefail; e=$(mktemp); {line} 2>$e | {reader}; "
                        's=("$?" "${PIPESTATUS[0]}"); echo "${s[1]} ${s[0]}"; cat $e; rm -f $e'],
                       capture_output=True, text=True, env=env, timeout=120)
    codes, _, err = r.stdout.partition("\n")
    own, pipeline = map(int, codes.split())
    return own, pipeline, err


@pytest.mark.parametrize("out", [("-o", "json"), ("-o", "plain"), ("-o", "ndjson")])
def test_a_gates_verdict_survives_a_reader_that_closed_the_pipe(run, three, zk, out):
    """`set -o pipefail; kadmin brokers can-stop 3 -o json | true`: the verdict (1: unsafe) is the exit code, not
    0; a safe verdict stays 0; a check's verdict stays its verdict (not UNKNOWN); a command that is no gate and
    could not write its output exits 74 and says so."""
    put_topic(three, "two", {0: [1, 3]}, min_isr="2")  # stopping 3 (or 1) leaves "two" under min ISR 2
    assert run("brokers", "can-stop", "3").exit_code == 1 and run("brokers", "can-stop", "2").exit_code == 0
    for args, verdict in [(("brokers", "can-stop", "3"), 1), (("brokers", "can-stop", "2"), 0),
                          (("partitions", "check"), 0), (("brokers", "wait", "2", "--registered"), 0)]:
        own, pipeline, err = piped(zk, *args, *out)
        assert (own, pipeline) == (verdict, verdict), (args, out, own, pipeline, err)
        assert "Traceback" not in err and "output lost" not in err, err
    kz = three
    kz.set("/brokers/topics/two/partitions/0/state", state(1, [1]))  # under min ISR: CRITICAL
    own, _, err = piped(zk, "partitions", "check", *out)
    assert own == 2, err
    own, pipeline, err = piped(zk, "brokers", "list", *out)  # no gate: its output is what it is for
    assert (own, pipeline) == (74, 74), err
    assert "output lost: stdout's reader closed the pipe" in err and "Traceback" not in err, err


def test_a_reader_that_took_it_all_changes_nothing(run, three, zk):
    own, pipeline, err = piped(zk, "brokers", "list", "-o", "json", reader="cat >/dev/null")
    assert (own, pipeline) == (0, 0) and "output lost" not in err, err
