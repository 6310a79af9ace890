"""Each command names its view; `quorum describe` builds its own from its options. Through the real CLI,
against the emulated KRaft server (tests/support/kraft_server.py)."""

from __future__ import annotations

import json
import time

import pytest

from tests.support.kraft_server import KraftServer, Scenario

pytestmark = pytest.mark.timeout(60)


def drifted() -> Scenario:
    """A healthy quorum whose observer 1 last fetched a day ahead of this machine's clock."""
    now = int(time.time() * 1000)
    sc = Scenario.cluster(now_ms=now)
    sc.quorum.observers[0].last_fetch_timestamp = now + 86_400_000
    return sc


def test_clock_drift_under_human_readable_is_one_line_exit_1_and_nothing_on_stdout(run_nozk):
    with KraftServer(drifted()) as srv:
        bs = srv.bootstrap()
        for fmt in ("plain", "table"):
            r = run_nozk("quorum", "describe", "--replication", "--human-readable", "--bootstrap-server", bs,
                         "-o", fmt)
            assert r.exit_code == 1 and r.stdout == "", (fmt, r.stdout)
            assert r.stderr.startswith("kadmin: error: Error while computing relative time, possible drift in "
                                       "system clock.") and len(r.stderr.splitlines()) == 1
        r = run_nozk("quorum", "describe", "--replication", "--human-readable", "--bootstrap-server", bs,
                     "-o", "json")
        doc = json.loads(r.stdout)  # the error's envelope alone: no result was printed before it
        assert (r.exit_code, doc["command"], doc["data"], doc["errors"][0]["code"]) == (
            1, "quorum describe", None, "clock_drift")
        # without --human-readable the raw timestamps are shown
        r = run_nozk("quorum", "describe", "--replication", "--bootstrap-server", bs, "-o", "plain")
        assert r.exit_code == 0 and r.stdout.splitlines()[0].split()[0] == "NodeId"


def test_the_envelope_names_the_full_command(run_nozk):
    with KraftServer(Scenario.cluster(now_ms=int(time.time() * 1000))) as srv:
        for argv in (["quorum", "describe", "--status"], ["quorum", "check"], ["brokers", "list"],
                     ["cluster", "id"]):
            r = run_nozk(*argv, "--bootstrap-server", srv.bootstrap(), "-o", "json")
            assert json.loads(r.stdout)["command"] == " ".join(argv[:2]), r.stderr


def test_cluster_id_plain_is_the_id_alone(run_nozk):
    with KraftServer(Scenario.cluster()) as srv:
        r = run_nozk("cluster", "id", "--bootstrap-server", srv.bootstrap(), "-o", "plain")
    assert r.exit_code == 0 and r.stdout == "MkU3OEVBNTcwNTJENDM2Qg\n"
