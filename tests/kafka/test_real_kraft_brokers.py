"""KRaft broker lifecycle on a real Kafka 4.3.1 cluster (kadmin's sandbox: 3 controllers + 3 brokers).

`brokers wait --fenced/--unfenced/--gone` and `brokers watch` poll DescribeCluster v2 (with fenced
brokers); `brokers list --metadata-dir` replays a controller's own `__cluster_metadata-0` snapshot
and log offline; `brokers diff` compares two such listings. What each test checks against is what
the real cluster says: DescribeCluster through kadmin's `brokers list --bootstrap-server`, the
sandbox's processes, and the controllers' metadata logs as Kafka wrote them.
The tests share one cluster and run in order; the module fixture stops it and kills any leftover.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.kafka import KAFKA_3_9, KAFKA_4, kafka_home, wait_for
from tests.support.sandbox import Sandbox, sandbox

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

CONTROLLERS = (3001, 3002, 3003)


@pytest.fixture(scope="module")
def kraft(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    home = kafka_home(KAFKA_4)
    with sandbox(tmp_path_factory.mktemp("kraft-brokers") / "sb", "--kafka-home", str(home), "--mode", "kraft",
                 "--brokers", "3") as sb:
        st = sb.status()
        sb.env["KADMIN_BOOTSTRAP_SERVER"] = st["bootstrap_servers"]
        yield sb


def metadata_dir(sb: Sandbox, controller: int) -> Path:
    return sb.dir / f"controller-{controller}" / "data"


def described(sb: Sandbox) -> dict[int, dict[str, Any]]:
    code, rows, err = sb.json("brokers", "list")
    assert code == 0, err
    return {r["id"]: r for r in rows}


def offline(sb: Sandbox, controller: int) -> dict[int, dict[str, Any]]:
    code, rows, err = sb.json("brokers", "list", "--metadata-dir", str(metadata_dir(sb, controller)))
    assert code == 0, err
    return {r["id"]: r for r in rows}


def save_listing(sb: Sandbox, controller: int, path: Path) -> Path:
    r = sb.run("brokers", "list", "--metadata-dir", str(metadata_dir(sb, controller)), "-o", "json")
    assert r.returncode == 0, r.stderr
    path.write_text(r.stdout)
    return path


def wait_cmd(sb: Sandbox, *args: str) -> tuple[int, dict[str, Any], str]:
    r = sb.run("brokers", "wait", *args, "-o", "json")
    doc = json.loads(r.stdout) if r.stdout.strip() else {}
    return r.returncode, doc.get("data") or {}, r.stderr


def same_as_describe_cluster(sb: Sandbox, controller: int) -> bool:
    live = described(sb)
    rows = offline(sb, controller)
    return sorted(rows) == sorted(live) and all(
        (rows[i]["host"], rows[i]["port"], rows[i]["state"]) == (live[i]["host"], live[i]["port"], live[i]["state"])
        for i in live)


def test_metadata_dir_listing_equals_describe_cluster(kraft: Sandbox) -> None:
    live = described(kraft)
    assert sorted(live) == [1, 2, 3] and all(r["state"] == "active" for r in live.values())
    for c in CONTROLLERS:  # every controller's own copy of the log (followers may trail: wait for the fact)
        wait_for(lambda: same_as_describe_cluster(kraft, c) or None, 300,  # noqa: B023 (called at once)
                 f"controller {c}'s log = DescribeCluster")
        rows, live = offline(kraft, c), described(kraft)
        assert sorted(rows) == sorted(live) == [1, 2, 3]
        for bid, row in rows.items():
            assert row["endpoints"] == [f"PLAINTEXT://127.0.0.1:{live[bid]['port']}"]
            assert row["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
            assert row["fenced"] is False and row["in_controlled_shutdown"] is False
            assert isinstance(row["epoch"], int) and row["epoch"] >= 0 and row["incarnation_id"]
            assert "metadata.version" in row["features"]
            assert row["source"] in ("log", "snapshot")
            if row["source"] == "log":  # the broker epoch is the offset of its RegisterBrokerRecord
                assert row["offset"] == row["epoch"]
    # the three controllers agree on every registration
    listings = [offline(kraft, c) for c in CONTROLLERS]
    assert listings[0] == listings[1] == listings[2]


def test_wait_fenced_after_hard_kill_unfenced_after_start(kraft: Sandbox) -> None:
    r = kraft.run("sandbox", "kill", "2", "--hard")
    assert r.returncode == 0, r.stderr
    code, data, err = wait_cmd(kraft, "2", "--fenced", "--timeout", "300")
    assert code == 0, err
    assert data["met"] is True and data["condition"] == "fenced" and data["fenced"] is True and data["epoch"] is None
    # said when it had to wait; on a loaded machine the controller can have fenced the broker (its session timed
    # out) before kadmin's first read, and then the wait is met at once and says only that (run 31 of the suite)
    assert "polling DescribeCluster every" in err or err.splitlines() == ["kadmin: broker 2 fenced"], err
    assert described(kraft)[2]["state"] == "fenced"
    # the broker is dead: --unfenced cannot come true, the wait times out with exit 1
    # (--timeout 5, not 1: a loaded machine's brokers must answer at all within it, else exit 4)
    code, data, err = wait_cmd(kraft, "2", "--unfenced", "--timeout", "5")
    assert code == 1 and data["met"] is False and data["fenced"] is True, err
    assert "timed out after 5s: broker 2 is registered and fenced" in err
    r = kraft.run("sandbox", "start", "2")
    assert r.returncode == 0, r.stderr
    code, data, err = wait_cmd(kraft, "2", "--unfenced", "--timeout", "300")
    assert code == 0, err
    assert data["met"] is True and data["fenced"] is False
    assert described(kraft)[2]["state"] == "active"


def test_epoch_gt_refused_on_kraft(kraft: Sandbox) -> None:
    code, _, err = wait_cmd(kraft, "2", "--epoch-gt", "5", "--timeout", "5")
    assert code == 3 and "DescribeCluster does not carry" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_watch_and_diff_across_a_real_bounce(kraft: Sandbox, tmp_path: Path) -> None:
    leader = 3001  # any controller's copy: wait below until it has the new registration
    wait_for(lambda: same_as_describe_cluster(kraft, leader) or None, 300, "controller log up to date")
    before = save_listing(kraft, leader, tmp_path / "before.json")
    old = offline(kraft, leader)
    watch = subprocess.Popen([sys.executable, "-m", "kadmin", "brokers", "watch", "--count", "2", "--timeout",
                              "300", "-o", "ndjson"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=kraft.env, stdin=subprocess.DEVNULL)
    try:
        assert watch.stderr is not None
        # said once the first DescribeCluster is in: the watch's baseline is taken
        assert "polling DescribeCluster" in watch.stderr.readline()
        r = kraft.run("sandbox", "bounce", "2")
        assert r.returncode == 0, r.stderr
        out, err = watch.communicate(timeout=360)
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
    assert watch.returncode == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    assert [(e["event"], e["id"]) for e in events] == [("fenced", 2), ("unfenced", 2)]
    assert all(e["endpoint"] == f"127.0.0.1:{described(kraft)[2]['port']}" and e["epoch"] is None for e in events)

    def bounced() -> bool | None:
        rows = offline(kraft, leader)
        return (rows[2]["incarnation_id"] != old[2]["incarnation_id"] and rows[2]["state"] == "active") or None

    wait_for(bounced, 300, "the new registration of broker 2 in the controller's log")
    new = offline(kraft, leader)
    assert new[2]["epoch"] > old[2]["epoch"]
    r = kraft.run("brokers", "diff", "--since", str(before), "--metadata-dir", str(metadata_dir(kraft, leader)),
                  "--exit-code", "-o", "json")
    assert r.returncode == 1, r.stderr
    d = json.loads(r.stdout)["data"]
    assert d["new"] == [] and d["dead"] == [] and d["unchanged"] == [1, 3]
    assert d["bounced"] == [{"id": 2, "old_epoch": old[2]["epoch"], "new_epoch": new[2]["epoch"],
                             "old_incarnation_id": old[2]["incarnation_id"],
                             "new_incarnation_id": new[2]["incarnation_id"]}]
    # a listing compared with itself (same incarnations, same epochs): nothing bounced
    after = save_listing(kraft, leader, tmp_path / "after.json")
    r = kraft.run("brokers", "diff", "--since", str(after), "--to", str(after), "--exit-code", "-o", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["data"]["unchanged"] == [1, 2, 3]


def test_gone_after_unregistering_a_stopped_broker(kraft: Sandbox) -> None:
    r = kraft.run("sandbox", "kill", "3", "--hard")
    assert r.returncode == 0, r.stderr
    code, _, err = wait_cmd(kraft, "3", "--fenced", "--timeout", "300")
    assert code == 0, err
    # still registered (fenced): --gone times out
    code, data, err = wait_cmd(kraft, "3", "--gone", "--timeout", "5")
    assert code == 1 and data["met"] is False, err
    r = kraft.run("brokers", "unregister", "3")
    assert r.returncode == 0, r.stderr
    code, data, err = wait_cmd(kraft, "3", "--gone", "--timeout", "300")
    assert code == 0 and data["met"] is True and data["fenced"] is None, err
    assert sorted(described(kraft)) == [1, 2]
    wait_for(lambda: (3 not in offline(kraft, 3001)) or None, 300, "UnregisterBrokerRecord in the controller's log")


def test_kraft_4_down(kraft: Sandbox) -> None:
    """Stopped here, not at module teardown: the 3.9.1 cluster below must not run beside it."""
    r = kraft.run("sandbox", "down")
    assert r.returncode == 0, r.stderr


# --------------------------------------------------------------------------------------- Kafka 3.9.1, KRaft
@pytest.fixture(scope="module")
def kraft39(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    home = kafka_home(KAFKA_3_9)
    with sandbox(tmp_path_factory.mktemp("kraft39-brokers") / "sb", "--kafka-home", str(home), "--mode", "kraft",
                 "--brokers", "3") as sb:
        sb.env["KADMIN_BOOTSTRAP_SERVER"] = sb.status()["bootstrap_servers"]
        yield sb


def test_kafka_3_9_describe_cluster_v1_hides_fenced_brokers_the_metadata_log_does_not(kraft39: Sandbox,
                                                                                       tmp_path: Path) -> None:
    """Kafka 3.9 answers DescribeCluster v1: a fenced broker is not listed at all. --fenced/--gone
    refuse (exit 3); the controllers' metadata log still shows the fenced registration."""
    wait_for(lambda: same_as_describe_cluster(kraft39, 3001) or None, 300, "controller log up to date")
    before = save_listing(kraft39, 3001, tmp_path / "before.json")
    old = offline(kraft39, 3001)
    r = kraft39.run("sandbox", "kill", "2", "--hard")
    assert r.returncode == 0, r.stderr
    code, _, err = wait_cmd(kraft39, "2", "--fenced", "--timeout", "60")
    assert code == 3 and "needs DescribeCluster v2" in err and len(err.strip().splitlines()) == 1, err
    assert wait_cmd(kraft39, "2", "--gone", "--timeout", "60")[0] == 3
    # fenced after broker.session.timeout.ms: the log says so while DescribeCluster v1 drops the broker
    wait_for(lambda: offline(kraft39, 3001)[2]["state"] == "fenced" or None, 300, "broker 2 fenced in the log")
    # the brokers answering DescribeCluster apply the fence record after the controllers write it (a loaded
    # machine showed it still listed): wait for the answers themselves (three in a row, so both live brokers
    # are likely asked) to drop broker 2
    wait_for(lambda: all(2 not in described(kraft39) for _ in range(3)) or None, 300,
             "broker 2 no longer listed by DescribeCluster v1")
    code, data, err = wait_cmd(kraft39, "2", "--registered", "--timeout", "5")
    assert code == 1 and data["met"] is False and "it is fenced or not registered" in err
    assert sorted(described(kraft39)) == [1, 3]
    r = kraft39.run("sandbox", "start", "2")
    assert r.returncode == 0, r.stderr
    code, data, err = wait_cmd(kraft39, "2", "--registered", "--timeout", "300")
    assert code == 0 and "only unfenced brokers are listed" in err, err
    wait_for(lambda: offline(kraft39, 3001)[2]["incarnation_id"] != old[2]["incarnation_id"] or None, 300,
             "the new registration in the log")
    r = kraft39.run("brokers", "diff", "--since", str(before), "--metadata-dir", str(metadata_dir(kraft39, 3001)),
                    "-o", "json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)["data"]
    assert [b["id"] for b in d["bounced"]] == [2] and d["unchanged"] == [1, 3]
