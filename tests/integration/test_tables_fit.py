"""Tables never hide data: `brokers list` and `partitions list` on a real pseudo-terminal 80 and 120 columns wide,
against registrations with long host names, several endpoints (SASL_SSL among them), long topic names and ISRs
of many brokers (issue 35 §1).

Every value the table shows is compared with the same command's `-o json`: each host, endpoint, rack, topic and
each broker id of a replica list or an ISR is on the screen whole, as one word (a folded list breaks only after
its commas, text only at its spaces: kadmin/render/tables.py); nothing is elided with `…`; no line is wider
than the terminal.
"""

from __future__ import annotations

import json
import re

import pytest
from rich.cells import cell_len

from kadmin.domain.znodes import encode_registration
from kadmin.sandbox.fleet import BrokerSpec
from tests.support.terminal import Shown, on_terminal

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

ISR = list(range(70001, 70013))  # twelve brokers


def host(i: int) -> str:
    # the longest endpoint, REPLICATION://HOST:9094, is 72 characters: it fits an 80-column line on its own
    return f"kafka-broker-{i}.a-long-host-name.eu-west-1.example.internal"


@pytest.fixture
def wide(fleet, kz):
    """Brokers with long hosts and three listeners each; topics with long names and ISRs of twelve brokers."""
    for i in (1, 2, 3):
        endpoints = [f"PLAINTEXT://{host(i)}:9092", f"SASL_SSL://{host(i)}:9093", f"REPLICATION://{host(i)}:9094"]
        data = encode_registration(host=host(i), port=9092, endpoints=endpoints, timestamp_ms=1_700_000_000_000,
                                   rack=f"eu-west-1{'abc'[i - 1]}-rack-with-a-long-name",
                                   listener_security_protocol_map={"PLAINTEXT": "PLAINTEXT", "SASL_SSL": "SASL_SSL",
                                                                   "REPLICATION": "SSL"})
        fleet.register(BrokerSpec(i, data=data))
    topics = {"payments.settlement.eu-west-1.v2.dead-letter-queue-for-retries": 3, "orders": 2}
    for topic, count in topics.items():
        doc = {"version": 3, "topic_id": "QmFzZTY0VG9waWNJZEFBQQ", "adding_replicas": {}, "removing_replicas": {},
               "partitions": {str(p): ISR for p in range(count)}}
        kz.create(f"/brokers/topics/{topic}", json.dumps(doc).encode())
        for p in range(count):
            state = {"version": 1, "leader": ISR[p], "leader_epoch": 7, "controller_epoch": 1, "isr": ISR[p:]}
            kz.create(f"/brokers/topics/{topic}/partitions/{p}/state", json.dumps(state).encode(), makepath=True)
    return fleet


def words(screen: str) -> set[str]:
    """The screen's words (split at spaces and the table's rules), and the elements of those that are lists."""
    raw = {w for w in re.split(r"[\s│┃]+", screen) if w}
    found = raw | {w.rstrip(",") for w in raw} | {w[:-1] for w in raw if w.endswith(":")}  # a key's colon
    return found | {x for w in found for x in w.split(",")}


def shown_values(row: dict, keys: tuple[str, ...]) -> list[str]:
    """What of a JSON row the table must show whole: its strings and numbers, each element of its lists."""
    out: list[str] = []
    for k in keys:
        v = row[k]
        for x in v if isinstance(v, list) else [v]:
            if x is not None and not isinstance(x, bool):
                out.append(str(x))
    return out


def assert_nothing_hidden(shown: Shown, columns: int, doc: dict, keys: tuple[str, ...]) -> None:
    assert shown.exit_code == 0, shown.stderr
    assert "…" not in shown.screen
    assert [ln for ln in shown.lines if cell_len(ln) > columns] == []
    seen = words(shown.screen)
    for row in doc["data"]:
        missing = [v for v in shown_values(row, keys) if v not in seen]
        assert missing == [], (missing, shown.screen)


BROKER_KEYS = ("id", "host", "port", "rack", "epoch", "session", "state", "version", "endpoints")
PARTITION_KEYS = ("topic", "partition", "leader", "leader_epoch", "partition_epoch", "replicas", "isr", "min_isr",
                  "adding_replicas", "removing_replicas")


@pytest.mark.parametrize("columns", [80, 120])
def test_brokers_list_shows_every_host_and_endpoint_whole(run, wide, zk, columns):
    code, doc, err = run.json("brokers", "list")
    assert code == 0, err
    assert len(doc["data"]) == 3 and all(len(b["endpoints"]) == 3 for b in doc["data"])
    shown = on_terminal("brokers", "list", columns=columns, env={"KADMIN_ZOOKEEPER": zk})
    assert_nothing_hidden(shown, columns, doc, BROKER_KEYS)


@pytest.mark.parametrize("columns", [80, 120])
def test_partitions_list_shows_every_topic_and_isr_whole(run, wide, zk, columns):
    code, doc, err = run.json("partitions", "list")
    assert code == 0, err
    assert {len(r["isr"]) for r in doc["data"]} == {12, 11, 10}
    shown = on_terminal("partitions", "list", columns=columns, env={"KADMIN_ZOOKEEPER": zk})
    assert_nothing_hidden(shown, columns, doc, PARTITION_KEYS)
    # an ISR that fits the line is shown as the one word it is in plain output, not only as its broker ids
    assert ",".join(map(str, ISR[2:])) in shown.screen


def test_a_terminal_wide_enough_gets_the_boxed_table_one_row_a_line(run, wide, zk):
    code, doc, err = run.json("brokers", "list")
    shown = on_terminal("brokers", "list", columns=600, env={"KADMIN_ZOOKEEPER": zk})
    assert_nothing_hidden(shown, 600, doc, BROKER_KEYS)
    assert shown.lines[1].startswith("┃ ID ┃ HOST")
    body = [ln for ln in shown.lines if ln.startswith("│")]
    assert [ln.split("│")[2].strip() for ln in body] == [host(i) for i in (1, 2, 3)]  # one line per broker

