"""`features describe` and `features upgrade` on real KRaft clusters, judged by Kafka's own FeatureCommand
(kafka-features) of the same version.

One sandbox at a time (a module-scoped parametrized fixture), each 3 controllers (3001-3003) + 2 brokers started
through kadmin's own CLI:
- Kafka 4.3.1 formatted at release version 3.9 (`sandbox up --release-version 3.9`): what a cluster looks like after
  a 3.9 -> 4.x roll, before its features are finalized. describe matches kafka-features describe line by line;
  a dry run changes nothing; the upgrade to 4.3 finalizes what `kafka-features version-mapping --release-version
  4.3` lists; a downgrade, and an upgrade whose brokers cannot be asked, are refused with nothing changed.
- Kafka 3.9.1: describe matches 3.9.1's tool (TABs); an upgrade to 4.0, which no 3.9 node supports, is refused.
The finalized-features epoch moves with the metadata log, so it is masked in the comparisons.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.kafka import KAFKA_3_9, KAFKA_4, kafka_home, tool, wait_for
from tests.support.sandbox import Sandbox, sandbox

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

FEATURE_TOOL = "org.apache.kafka.tools.FeatureCommand"
CONTROLLERS = [3001, 3002, 3003]


@dataclass
class Kraft:
    version: str
    sb: Sandbox
    servers: str
    controllers: str

    def kadmin(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.sb.run(*args, timeout=180)

    def kadmin_json(self, *args: str) -> tuple[int, dict[str, Any], str]:
        r = self.kadmin(*args, "-o", "json")
        return r.returncode, json.loads(r.stdout), r.stderr

    def theirs(self, *args: str) -> str:
        return tool(kafka_home(self.version), FEATURE_TOOL, *args).stdout

    def finalized(self) -> dict[str, str]:
        """feature -> FinalizedVersionLevel, as Kafka's tool reads it through the brokers."""
        out = self.theirs("--bootstrap-server", self.servers, "describe")
        return {m[1]: m[2] for m in re.finditer(r"Feature: (\S+)\s.*?FinalizedVersionLevel: (\S+)", out)}


# A test that holds for one version only runs on that version's cluster (the same module-scoped instance): no skips
ONLY_4 = pytest.mark.parametrize("kraft", [KAFKA_4], indirect=True)
ONLY_3_9 = pytest.mark.parametrize("kraft", [KAFKA_3_9], indirect=True)


@pytest.fixture(scope="module", params=[KAFKA_4, KAFKA_3_9])
def kraft(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kraft]:
    version = request.param
    home = kafka_home(version)
    at = ["--release-version", "3.9"] if version == KAFKA_4 else []
    with sandbox(tmp_path_factory.mktemp(f"features-{version}") / "sb", "--kafka-home", str(home), "--mode", "kraft",
                 "--brokers", "2", *at) as sb:
        st = sb.status()
        assert st["kafka_version"] == version
        kraft = Kraft(version, sb, st["bootstrap_servers"], st["bootstrap_controllers"])
        if version == KAFKA_4:
            quorum_knows_every_voters_kraft_version(kraft)
        yield kraft


def quorum_knows_every_voters_kraft_version(kraft: Kraft) -> None:
    """Until the quorum leader has heard from every voter what kraft.version it supports (KIP-853: each voter
    tells the leader itself, after it starts), Kafka refuses kraft.version 1 with INVALID_UPDATE_VERSION, "not all
    of the voters support it" (seen at load 17). The tests judge kadmin on a quorum past that window: Kafka's own
    tool validating the upgrade (`--dry-run`, nothing changed) is the fact waited for."""
    def validated() -> bool:
        r = tool(kafka_home(kraft.version), FEATURE_TOOL, "--bootstrap-server", kraft.servers, "upgrade",
                 "--release-version", "4.3", "--dry-run", check=False)
        return r.returncode == 0

    wait_for(validated, 120, "Kafka's kafka-features to validate the upgrade to 4.3 (every voter's kraft.version "
             "known to the quorum leader)", interval=0.5)


def masked(text: str) -> str:
    return re.sub(r"Epoch: \d+", "Epoch: N", text)


def first(addresses: str) -> str:
    return addresses.split(",")[0]


@pytest.mark.parametrize("via", ["server", "controller"])
def test_describe_is_kafka_features_describe(kraft: Kraft, via: str) -> None:
    flag = "--bootstrap-server" if via == "server" else "--bootstrap-controller"
    address = first(kraft.servers if via == "server" else kraft.controllers)
    fmt = ["--tool-format", "3.9"] if kraft.version == KAFKA_3_9 else []
    ours = kraft.kadmin("features", "describe", flag, address, *fmt, "-o", "plain")
    # through the controllers alone the brokers cannot be asked: exit 5, said, and the text still printed
    assert ours.returncode == (0 if via == "server" else 5), ours.stderr
    theirs = kraft.theirs(flag, address, "describe")
    assert masked(ours.stdout) == masked(theirs)
    assert ("\t" in ours.stdout) == (kraft.version == KAFKA_3_9)
    if via == "controller":
        assert "broker 1 could not be asked" in ours.stderr and "--bootstrap-server" in ours.stderr


def test_describe_asks_every_registered_node(kraft: Kraft) -> None:
    code, doc, err = kraft.kadmin_json("features", "describe", "--bootstrap-server", kraft.servers,
                                       "--bootstrap-controller", kraft.controllers)
    assert code == 0, err
    data = doc["data"]
    assert [(n["role"], n["id"]) for n in data["nodes"]] == [("controller", c) for c in CONTROLLERS] + \
        [("broker", 1), ("broker", 2)]
    assert all(n["supported"] and n["error"] is None for n in data["nodes"])
    mv = next(f for f in data["features"] if f["name"] == "metadata.version")
    assert mv["finalized"] == "3.9-IV0" and mv["finalized_level"] == 21
    assert mv["every_node"] == mv["supported"]
    # field by field against Kafka's tool: each feature's finalized level and supported range
    theirs = kraft.theirs("--bootstrap-server", first(kraft.servers), "describe")
    rows = {m[1]: (m[2], m[3], m[4]) for m in re.finditer(
        r"Feature: (\S+)\s+SupportedMinVersion: (\S+)\s+SupportedMaxVersion: (\S+)\s+FinalizedVersionLevel: (\S+)",
        theirs)}
    from kadmin.domain.features import level_text

    assert {f["name"]: (level_text(f["name"], f["supported"]["min"]), level_text(f["name"], f["supported"]["max"]),
                        f["finalized"]) for f in data["features"]} == rows


@ONLY_4  # a 3.9 cluster is at its newest release already
def test_a_dry_run_validates_and_changes_nothing(kraft: Kraft) -> None:
    before = kraft.finalized()
    code, doc, err = kraft.kadmin_json("features", "upgrade", "--release-version", "4.3", "--dry-run",
                                       "--bootstrap-server", kraft.servers)
    assert code == 0, err
    data = doc["data"]
    assert data["validated"] is True and data["upgraded"] is False and not data["refusals"]
    assert {c["feature"]: c["to_level"] for c in data["changes"]} == {
        "metadata.version": 30, "kraft.version": 1, "transaction.version": 2, "group.version": 1,
        "eligible.leader.replicas.version": 1, "share.version": 1, "streams.version": 1}
    assert "nothing changed" in err
    assert kraft.finalized() == before


def test_without_the_brokers_it_is_refused(kraft: Kraft) -> None:
    release = "4.3" if kraft.version == KAFKA_4 else "4.0"
    before = kraft.finalized()
    code, doc, err = kraft.kadmin_json("features", "upgrade", "--release-version", release,
                                       "--bootstrap-controller", kraft.controllers)
    assert code == 7, err
    assert {(r["reason"], r["node"]) for r in doc["data"]["refusals"]} >= {("not_asked", 1), ("not_asked", 2)}
    assert "nothing sent" in err
    assert kraft.finalized() == before


@ONLY_3_9  # every 4.3.1 node supports every release version kadmin knows
def test_a_level_no_node_supports_is_refused(kraft: Kraft) -> None:
    before = kraft.finalized()
    r = kraft.kadmin("features", "upgrade", "--release-version", "4.0", "--bootstrap-server", kraft.servers,
                     "--bootstrap-controller", kraft.controllers, "-o", "plain")
    assert r.returncode == 7, r.stderr
    assert "controller 3001 does not support metadata.version 4.0-IV3: it supports 3.0-IV1 to 3.9-IV0" in r.stderr
    assert r.stdout.startswith("metadata.version\t3.9-IV0\t4.0-IV3\trefused: unsupported\n")
    assert kraft.finalized() == before


@ONLY_4  # a 3.9 cluster is at its newest release already
def test_the_upgrade_finalizes_the_release_versions_levels(kraft: Kraft) -> None:
    mapping = kraft.theirs("--bootstrap-server", kraft.servers, "version-mapping", "--release-version", "4.3")
    want = {m[1]: m[2] for m in re.finditer(r"^(\S+)=(\d+)", mapping, re.M)}
    code, doc, err = kraft.kadmin_json("features", "upgrade", "--release-version", "4.3",
                                       "--bootstrap-server", kraft.servers, "--bootstrap-controller", kraft.controllers)
    assert code == 0, err
    assert doc["data"]["upgraded"] is True
    assert {k: str(v) for k, v in doc["data"]["target"].items()} == want

    def finalized() -> dict[str, str] | None:
        now = kraft.finalized()
        return now if now.get("metadata.version") == "4.3-IV0" else None

    now = wait_for(finalized, 60, "kafka-features to show metadata.version 4.3-IV0")
    assert {k: v for k, v in now.items() if k != "metadata.version"} == \
        {k: v for k, v in want.items() if k != "metadata.version"}
    # again: nothing to do; lower: a downgrade, refused with nothing sent
    again = kraft.kadmin("features", "upgrade", "--release-version", "4.3", "--bootstrap-server", kraft.servers)
    assert again.returncode == 0 and "already" in again.stderr, again.stderr
    down = kraft.kadmin("features", "upgrade", "--release-version", "4.0", "--bootstrap-server", kraft.servers)
    assert down.returncode == 7, down.stderr
    assert "metadata.version is finalized at 4.3-IV0: 4.0-IV3 would be a downgrade" in down.stderr
    assert kraft.finalized() == now
