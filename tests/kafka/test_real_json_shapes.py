"""Every cluster command's `-o json` keeps its shape (issue 21): key order, types and the envelope, on real clusters.

Issue 21: "JSON output must stay byte-identical except where this issue names a change". Values vary from run
to run (ids, epochs, timestamps, ports), so what is pinned is each document's SHAPE, plus what is not data:

- `shape`: the document walked depth first, one `path: type` line per leaf, in the document's own key order
  (byte identity includes order). A dict's keys are `.key` (`["key"]` when the key is not a plain word), a
  list is `[]` and stands for its FIRST element (`path: []` when the list is empty), an empty dict is
  `path: {}`, a scalar is its JSON type: `int`, `float`, `str`, `bool`, `null`.
- `exit_code`, `status`, `command`, `version` (kadmin_result_version) and `error_codes` (each `errors[].code`);
- `layout`: how the text is laid out (`indent=2`: exactly `json.dumps(doc, indent=2, ensure_ascii=False)` and a
  newline), so whitespace and escaping are pinned too.

Two real clusters, one per mode, started once each for this module:

- ZooKeeper mode: three Kafka 3.9.1 brokers under a fresh chroot of the session's real ZooKeeper
  (`zk_mode_cluster`, as tests/kafka/test_real_zk_mode.py), asked with `--zookeeper`, with `--zookeeper` and
  `--bootstrap-server` (min.insync.replicas and drain over the Kafka protocol), and with `--bootstrap-server`
  alone (the Kafka-protocol backend on ZooKeeper-mode brokers);
- KRaft: kadmin's sandbox on Kafka 4.3.1, 3 controllers + 3 brokers (as test_real_kraft_every_command.py),
  asked with `--bootstrap-server` and with `--bootstrap-controller` alone.

Each holds the same topics, made so that the lists in the answers are not empty by chance: `shapes` (3
partitions, RF 3, each broker first once), `solo` (RF 1 on broker 1: `can-stop 1` blocks, `drain 1` names a
sole replica) and `tight` (RF 2 on brokers 1 and 3, min.insync.replicas=2: at min ISR). The files the commands
read are made from what the cluster said: a saved `brokers list` and a changed copy (a bounced, a new and a
dead broker for `diff`), a drain file with a partition to restore, one changed and one gone; in ZooKeeper mode
two of kadmin's host mappings (/brokers/hosts, which Kafka does not read) for the `ids` commands. Only
read-only and --dry-run commands run (and `unregister 99`, which is not registered), in process through
tests.conftest.Run; a command refused in one mode is recorded as well (exit 3 and its error code). Nothing
sleeps: the fixtures wait until ZooKeeper and the brokers show every replica in sync.

The expected shapes are tests/golden/json-shapes-zookeeper.json and json-shapes-kraft.json, written by this
same module run on kadmin BEFORE the issue-21 refactor (commit 0d65f09). To regenerate them, run this module
from inside a worktree of that commit: `python -m pytest` puts the current directory first on sys.path (and
pytest the rootdir), so the old `kadmin` is imported in process and in the sandbox's subprocesses; the module
checks that `kadmin.__file__` is the same in both and lies under KADMIN_JSON_SHAPES_FROM:

    git worktree add /tmp/kadmin-before 0d65f09
    cp tests/kafka/test_real_json_shapes.py /tmp/kadmin-before/tests/kafka/
    cd /tmp/kadmin-before && KADMIN_JSON_SHAPES_WRITE=$OLDPWD/tests/golden KADMIN_JSON_SHAPES_FROM=$PWD \\
        PYTHONPATH=$PWD $OLDPWD/.venv/bin/python -m pytest -q -p no:cacheprovider tests/kafka/test_real_json_shapes.py
    cd - && git worktree remove --force /tmp/kadmin-before

KADMIN_JSON_SHAPES_DUMP=DIR also keeps every command's exit code, stdout and stderr in DIR/MODE/.
Without KADMIN_JSON_SHAPES_WRITE the module compares and, on a difference, names the command, the key's path
and what it was before and is now. A golden file is written only when every case of its mode ran.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kadmin.sandbox.zkserver import Ensemble
from tests.conftest import Run
from tests.support.kafka import KAFKA_4, RealCluster, kafka_home, wait_for, zk_mode_cluster
from tests.support.sandbox import sandbox

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

# Read at import: the autouse isolated_env fixture removes every KADMIN_* variable before each test.
WRITE = os.environ.get("KADMIN_JSON_SHAPES_WRITE")  # a directory: write the golden files there, compare nothing
FROM = os.environ.get("KADMIN_JSON_SHAPES_FROM")  # the kadmin tree that must be the one imported
DUMP = os.environ.get("KADMIN_JSON_SHAPES_DUMP")  # a directory: also keep each command's stdout and stderr there
GOLDEN = Path(__file__).resolve().parents[1] / "golden"
WAIT = 300.0  # deadline for observable facts on a busy machine
IDS = (1, 2, 3)
TOPICS = {"shapes": {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}, "solo": {0: [1]}, "tight": {0: [1, 3]}}
TOPIC_CONFIGS = {"tight": {"min.insync.replicas": "2"}}  # as many as its replicas: at min ISR


# ------------------------------------------------------------------------------------------------ shapes
def _key(k: str) -> str:
    return f".{k}" if re.fullmatch(r"[A-Za-z0-9_-]+", k) else f"[{json.dumps(k)}]"


def _type(v: Any) -> str:
    if v is None:
        return "null"
    for t, name in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str")):
        if isinstance(v, t):
            return name
    raise TypeError(f"not a JSON value: {v!r}")


def shape(doc: Any, path: str = "") -> list[str]:
    """`path: type` lines, depth first in the document's key order; a list stands for its first element."""
    where = path.removeprefix(".") or "$"
    if isinstance(doc, dict):
        if not doc:
            return [f"{where}: {{}}"]
        return [line for k, v in doc.items() for line in shape(v, path + _key(str(k)))]
    if isinstance(doc, list):
        return [f"{where}: []"] if not doc else shape(doc[0], path + "[]")
    return [f"{where}: {_type(doc)}"]


def layout(doc: Any, stdout: str) -> str:
    """How the document is laid out as text (whitespace, escapes), so byte identity is more than key order."""
    for name, text in (("indent=2", json.dumps(doc, indent=2, ensure_ascii=False)),
                       ("compact", json.dumps(doc, ensure_ascii=False))):
        if stdout == text + "\n":
            return name
    return "other"


def record(code: int, stdout: str) -> dict[str, Any]:
    """What is pinned for one run: exit code, the envelope's fixed values and error codes, the layout, the shape."""
    doc = json.loads(stdout)  # exactly one JSON document on stdout
    assert isinstance(doc, dict), stdout[:500]
    return {"exit_code": code, "version": doc.get("kadmin_result_version"), "command": doc.get("command"),
            "status": doc.get("status"), "error_codes": [e.get("code") for e in doc.get("errors") or []],
            "layout": layout(doc, stdout), "shape": shape(doc)}


_SEGMENT = re.compile(r'\.[A-Za-z0-9_-]+|\["(?:[^"\\]|\\.)*"\]|\[\]')


def _split(line: str) -> tuple[str, str]:
    path, _, typ = line.rpartition(": ")
    return path, typ


def _children(lines: list[str]) -> dict[str, list[str]]:
    """{container path: its child segments in order} from shape lines."""
    out: dict[str, list[str]] = {}
    for line in lines:
        path, _ = _split(line)
        p = "." + path if not path.startswith(("[", "$")) else path
        segs = _SEGMENT.findall(p)
        for i, seg in enumerate(segs):
            parent = "".join(segs[:i]).lstrip(".") or "$"
            kids = out.setdefault(parent, [])
            if seg not in kids:
                kids.append(seg)
    return out


def differences(case: str, before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Each difference in one line: the case (command and connection), the key's path, before -> after."""
    out = [f"{case}: {k}: {before.get(k)!r} -> {after.get(k)!r}"
           for k in ("exit_code", "version", "command", "status", "error_codes", "layout")
           if before.get(k) != after.get(k)]
    b = dict(_split(x) for x in before["shape"])
    a = dict(_split(x) for x in after["shape"])
    for p in b:
        if p not in a:
            out.append(f"{case}: {p}: {b[p]} -> (absent)")
        elif a[p] != b[p]:
            out.append(f"{case}: {p}: {b[p]} -> {a[p]}")
    for p in a:
        if p not in b:
            out.append(f"{case}: {p}: (absent) -> {a[p]}")
    kb, ka = _children(before["shape"]), _children(after["shape"])
    for parent, kids in kb.items():
        common = [k for k in kids if k in ka.get(parent, [])]
        now = [k for k in ka.get(parent, []) if k in kids]
        if common != now:
            out.append(f"{case}: key order under {parent}: {' '.join(common)} -> {' '.join(now)}")
    return out


# ------------------------------------------------------------------------------------------------ the cases
@dataclass(frozen=True)
class Case:
    conn: str  # a key of the target's `conn`: the connection options
    args: tuple[str, ...]  # {placeholders} filled from the target's `values`

    @property
    def id(self) -> str:
        return f"{' '.join(self.args)} [{self.conn}]"


def cases(conn: str, *rows: tuple[str, ...]) -> list[Case]:
    return [Case(conn, row) for row in rows]


T = "--timeout"
# ZooKeeper mode: what a ZooKeeper-mode operator runs, and what is KRaft's only (refused, exit 3).
ZK_CASES: list[Case] = [
    *cases("-z",
           ("brokers", "list"),
           ("brokers", "list", "--metadata-dir", "{meta_dir}"),
           ("brokers", "show", "1"),
           ("brokers", "show", "99"),
           ("brokers", "max-epoch"),
           ("brokers", "diff", "--since", "{saved}"),
           ("brokers", "diff", "--since", "{saved}", "--to", "{saved}"),
           ("brokers", "diff", "--since", "{changed}"),
           ("brokers", "diff", "--since", "{changed}", "--to", "{saved}", "--exit-code"),
           ("brokers", "diff", "--since", "{saved}", "--metadata-dir", "{meta_dir}"),
           ("brokers", "watch", T, "1"),
           ("brokers", "watch", "--initial", "--count", "3", T, "300"),
           ("brokers", "wait", "1", "--registered", T, "300"),
           ("brokers", "wait", "99", "--gone", T, "300"),
           ("brokers", "wait", "1", "--epoch-gt", "0", T, "300"),
           ("brokers", "wait", "1", "--in-sync", T, "300"),
           ("brokers", "wait", "1", "--unfenced", T, "300"),
           ("brokers", "wait", "1", "--fenced", T, "300"),
           ("brokers", "can-stop", "1"),
           ("brokers", "can-stop", "2"),
           ("brokers", "shutdown", "1", "--dry-run"),
           ("brokers", "shutdown", "2", "--dry-run"),
           ("brokers", "drain", "1", "--dry-run"),
           ("brokers", "undrain", "1", "--from", "{drained}", "--dry-run"),
           ("brokers", "unregister", "99", "--dry-run"),
           ("partitions", "list"),
           ("partitions", "list", "--topic", "shapes"),
           ("partitions", "list", "--broker", "2"),
           ("partitions", "list", "--at-min-isr"),
           ("partitions", "check"),
           ("quorum", "describe", "--status"),
           ("quorum", "describe", "--replication"),
           ("quorum", "check"),
           ("cluster", "id"),
           ("cluster", "check-id", "{meta}"),
           ("ids", "resolve", "--host", "h1"),
           ("ids", "resolve", "--host", "h2"),
           ("ids", "claim", "--host", "h3", "--dry-run"),
           ("ids", "missing"),
           ("ids", "hosts"),
           ("ids", "map", "h3", "50", "--dry-run"),
           ("ids", "map", "h3", "2", "--dry-run"),
           ("ids", "unmap", "h1", "--dry-run"),
           ("ids", "unmap", "h9", "--dry-run"),
           ("ids", "gc", "--dry-run")),
    *cases("-z -b",
           ("brokers", "can-stop", "1"),
           ("brokers", "wait", "1", "--in-sync", T, "300"),
           ("brokers", "drain", "1", "--dry-run"),
           ("brokers", "undrain", "1", "--from", "{drained}", "--dry-run"),
           ("partitions", "list", "--topic", "shapes"),
           ("partitions", "check")),
    *cases("-b",
           ("brokers", "list"),
           ("brokers", "can-stop", "1"),
           ("partitions", "list", "--topic", "shapes"),
           ("partitions", "check"),
           ("cluster", "id")),
]

# KRaft: every command with --bootstrap-server, and with --bootstrap-controller alone (some refused: exit 3).
_KRAFT_BOTH: list[tuple[str, ...]] = [
    ("brokers", "list"),
    ("brokers", "list", "--metadata-dir", "{meta_dir}"),
    ("brokers", "show", "1"),
    ("brokers", "max-epoch"),
    ("brokers", "diff", "--since", "{saved}"),
    ("brokers", "diff", "--since", "{saved}", "--metadata-dir", "{meta_dir}"),
    ("brokers", "diff", "--since", "{saved}", "--to", "{saved}"),
    ("brokers", "diff", "--since", "{changed}", "--to", "{saved}", "--exit-code"),
    ("brokers", "diff", "--since", "{changed}", "--metadata-dir", "{meta_dir}"),
    ("brokers", "watch", T, "1"),
    ("brokers", "watch", "--initial", "--count", "3", T, "300"),
    ("brokers", "wait", "1", "--registered", T, "300"),
    ("brokers", "wait", "1", "--unfenced", T, "300"),
    ("brokers", "wait", "99", "--gone", T, "300"),
    ("brokers", "wait", "1", "--in-sync", T, "300"),
    ("brokers", "wait", "1", "--epoch-gt", "0", T, "5"),
    ("brokers", "can-stop", "1"),
    ("brokers", "can-stop", "2"),
    ("brokers", "shutdown", "1", "--dry-run"),
    ("brokers", "unregister", "99"),
    ("brokers", "unregister", "99", "--dry-run"),
    ("brokers", "drain", "1", "--dry-run"),
    ("brokers", "undrain", "1", "--from", "{drained}", "--dry-run"),
    ("partitions", "list"),
    ("partitions", "list", "--topic", "shapes"),
    ("partitions", "list", "--at-min-isr"),
    ("partitions", "check"),
    ("quorum", "describe", "--status"),
    ("quorum", "describe", "--replication"),
    ("quorum", "check", "--max-lag", "1000000000", "--max-lag-ms", "86400000"),
    ("quorum", "check", "--max-lag", "1000000000", "--max-lag-ms", "86400000", "--restart", "3001"),
    ("cluster", "id"),
    ("cluster", "check-id", "{meta}"),
]
KRAFT_CASES: list[Case] = [
    *cases("-b", *_KRAFT_BOTH,
           ("ids", "resolve", "--host", "h1"),
           ("ids", "claim", "--host", "h1", "--dry-run"),
           ("ids", "missing"),
           ("ids", "hosts"),
           ("ids", "map", "h1", "50", "--dry-run"),
           ("ids", "unmap", "h1", "--dry-run"),
           ("ids", "gc", "--dry-run")),
    *cases("--bootstrap-controller", *_KRAFT_BOTH),
]

MODES = {"zookeeper": ZK_CASES, "kraft": KRAFT_CASES}
SEEN: dict[str, dict[str, dict[str, Any]]] = {mode: {} for mode in MODES}  # mode -> case id -> record (WRITE)


# ------------------------------------------------------------------------------------------------ the clusters
@dataclass
class Target:
    """A running cluster: how to reach it (`conn`: label -> options) and the files the cases name."""

    conn: dict[str, tuple[str, ...]]
    values: dict[str, str]
    run: Run = field(default_factory=lambda: Run(None))

    def __call__(self, case: Case) -> tuple[int, str, str]:
        args = [a.format(**self.values) for a in case.args]
        r = self.run(*args, *self.conn[case.conn], "-o", "json")
        return r.exit_code, r.stdout, r.stderr


def check_kadmin(env: dict[str, str] | None = None) -> None:
    """The kadmin imported here and in a subprocess (the sandbox's) is one and the same (FROM's, if given)."""
    import kadmin

    here = Path(kadmin.__file__).resolve()
    there = subprocess.run([sys.executable, "-c", "import kadmin; print(kadmin.__file__)"], capture_output=True,
                           text=True, env=env, timeout=120, check=True).stdout.strip()
    assert Path(there).resolve() == here, f"in process {here}, in a subprocess {there}"
    if FROM:
        assert here.is_relative_to(Path(FROM).resolve()), f"kadmin is {here}, not under {FROM}"
    print(f"\nkadmin: {here}")


def create_topics(bootstrap: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=60000)
    try:
        admin.create_topics([NewTopic(t, replica_assignments=dict(a), topic_configs=TOPIC_CONFIGS.get(t, {}))
                             for t, a in TOPICS.items()], timeout_ms=60000)
    finally:
        admin.close()


def brokers_show_in_sync(bootstrap: str) -> Callable[[], bool]:
    """Every partition of TOPICS has a leader and its whole replica set in sync, as the brokers' metadata says."""
    def check() -> bool:
        from kafka.admin import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
        try:
            seen = {(t["name"], p["partition_index"]): p for t in admin.describe_topics(list(TOPICS))
                    for p in t["partitions"]}
        finally:
            admin.close()
        return all((t, p) in seen and seen[(t, p)]["leader_id"] >= 0
                   and sorted(seen[(t, p)]["isr_nodes"]) == sorted(r) for t, a in TOPICS.items() for p, r in a.items())
    return check


def zk_shows_in_sync(cluster: RealCluster) -> bool:
    st = cluster.partition_states(TOPICS)
    return all((t, p) in st and st[(t, p)]["leader"] >= 0 and sorted(st[(t, p)]["isr"]) == sorted(r)
               for t, a in TOPICS.items() for p, r in a.items())


def drain_file(path: Path) -> str:
    """A drain file for broker 1 (what `drain 1 --save` writes), so that every list of `undrain --dry-run` has
    a row: shapes-0 saved in another order (restored), shapes-2 with another replica set (changed), a
    partition that does not exist (gone), the others as they are (already)."""
    saved = {("shapes", 0): [2, 3, 1], ("shapes", 2): [3, 1, 4]}
    parts = [{"topic": t, "partition": p, "replicas": saved.get((t, p), r)}
             for t, a in TOPICS.items() for p, r in a.items() if 1 in r and len(r) > 1]
    parts.append({"topic": "vanished", "partition": 0, "replicas": [1, 2]})
    path.write_text(json.dumps({"version": 1, "kind": "kadmin-drain", "broker_id": 1,
                                "created": "2025-01-01T00:00:00Z", "cluster": {}, "partitions": parts}, indent=2))
    return str(path)


def saved_listings(run: Run, tmp: Path, *args: str) -> dict[str, str]:
    """`brokers list` saved as it is ({saved}), and changed ({changed}) so that a diff against it has a row in
    each list: broker 1's epoch lower (bounced), broker 2 left out (new), a broker 99 (dead)."""
    r = run("brokers", "list", *args, "-o", "json")
    assert r.exit_code == 0, r.stderr
    (tmp / "saved.json").write_text(r.stdout)
    doc = json.loads(r.stdout)
    rows = {row["id"]: row for row in doc["data"]}
    assert sorted(rows) == list(IDS) and all(type(row["epoch"]) is int for row in rows.values()), doc
    doc["data"] = [{**rows[1], "epoch": rows[1]["epoch"] - 1}, rows[3], {**rows[3], "id": 99}]
    (tmp / "changed.json").write_text(json.dumps(doc))
    return {"saved": str(tmp / "saved.json"), "changed": str(tmp / "changed.json")}


def map_hosts(cluster: RealCluster) -> None:
    """kadmin's own host mappings (/brokers/hosts, which Kafka does not read), so the `ids` commands list some:
    h1 -> 1 (stale: broker 1 registers from 127.0.0.1) and h2 -> 77 (not registered)."""
    for host, bid in (("h1", 1), ("h2", 77)):
        cluster.kz.create(f"/brokers/hosts/{host}", json.dumps({"version": 0, "broker.id": bid},
                                                               separators=(",", ":")).encode(), makepath=True)


@pytest.fixture(scope="module")
def zookeeper(zk_server: Ensemble, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    check_kadmin()
    tmp = tmp_path_factory.mktemp("shapes-zk")
    with zk_mode_cluster(zk_server, tmp / "kafka", IDS, chroot_prefix="shapes",
                         extra={"auto.leader.rebalance.enable": "false"}) as c:
        create_topics(c.bootstrap)
        wait_for(lambda: zk_shows_in_sync(c), WAIT, "every partition's replicas in sync in ZooKeeper", interval=0.2)
        wait_for(brokers_show_in_sync(c.bootstrap), WAIT, "every partition's replicas in sync at the brokers",
                 interval=0.5)
        # The controller LAST: a ZooKeeper-mode broker that is not the controller answers ListPartitionReassignments
        # with NOT_CONTROLLER, and kadmin then asks the controller Metadata names (KraftClient.send_to_controller);
        # before, that was exit 6 unless the election happened to pick the first bootstrap broker. (The golden
        # files were made by the old code with the controller first: the answers must not differ.)
        last = c.controller()
        assert last in c.brokers
        bootstrap = ",".join(c.brokers[i].bootstrap for i in sorted(c.brokers, key=lambda i: i == last))
        z, b = ("--zookeeper", c.zk), ("--bootstrap-server", bootstrap)
        empty = tmp / "no-metadata"
        empty.mkdir()
        map_hosts(c)
        values = {**saved_listings(Run(None), tmp, *z), "drained": drain_file(tmp / "drain.json"),
                  "meta": str(c.brokers[1].dir / "data" / "meta.properties"), "meta_dir": str(empty)}
        yield Target({"-z": z, "-z -b": (*z, *b), "-b": b}, values)


@pytest.fixture(scope="module")
def kraft(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    home = kafka_home(KAFKA_4)
    tmp = tmp_path_factory.mktemp("shapes-kraft")
    with sandbox(tmp / "sb", "--kafka-home", str(home), "--mode", "kraft", "--brokers", "3") as sb:
        check_kadmin(sb.env)
        st = sb.status()
        server, controller = str(st["bootstrap_servers"]), str(st["bootstrap_controllers"])
        create_topics(server)
        wait_for(brokers_show_in_sync(server), WAIT, "every partition's replicas in sync at the brokers",
                 interval=0.5)
        mdir = sb.dir / "controller-3001" / "data"
        values = {**saved_listings(Run(None), tmp, "--metadata-dir", str(mdir)),
                  "drained": drain_file(tmp / "drain.json"), "meta_dir": str(mdir),
                  "meta": str(sb.dir / "broker-1" / "data" / "meta.properties")}
        yield Target({"-b": ("--bootstrap-server", server), "--bootstrap-controller": ("--bootstrap-controller",
                                                                                       controller)}, values)


# ------------------------------------------------------------------------------------------------ the tests
def golden_path(mode: str) -> Path:
    return (Path(WRITE) if WRITE else GOLDEN) / f"json-shapes-{mode}.json"


def load_golden(mode: str) -> dict[str, Any]:
    return dict(json.loads(golden_path(mode).read_text())["cases"])


def run_case(target: Target, mode: str, case: Case) -> None:
    code, out, err = target(case)
    if DUMP:
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", case.id).strip("_")
        (Path(DUMP) / mode).mkdir(parents=True, exist_ok=True)
        (Path(DUMP) / mode / f"{name}.txt").write_text(f"exit {code}\n--- stdout\n{out}\n--- stderr\n{err}")
    assert "Traceback" not in err and out.strip(), f"{case.id}: exit {code}, stdout {out!r}, stderr {err}"
    got = record(code, out)
    if WRITE:
        SEEN[mode][case.id] = got
        return
    before = load_golden(mode).get(case.id)
    assert before is not None, f"{case.id}: not in {golden_path(mode)} (regenerate: see the module docstring)"
    diffs = differences(case.id, before, got)
    assert not diffs, "JSON differs from before the refactor:\n" + "\n".join(diffs)


def finish(mode: str) -> None:
    """With WRITE: write the golden file once every case of the mode ran; without: it lists exactly the cases."""
    ids = [c.id for c in MODES[mode]]
    if not WRITE:
        assert list(load_golden(mode)) == ids, f"{golden_path(mode)} is stale: regenerate (module docstring)"
        return
    missing = [i for i in ids if i not in SEEN[mode]]
    assert not missing, f"not written: cases did not run: {missing}"
    golden_path(mode).write_text(json.dumps({"cases": {i: SEEN[mode][i] for i in ids}}, indent=1) + "\n")


def test_case_ids_are_unique() -> None:
    for mode, cs in MODES.items():
        ids = [c.id for c in cs]
        assert len(ids) == len(set(ids)), mode


# Commands added after the golden files were made (issue 21 pins the shapes that existed then): no golden case can
# exist for them. `roll` (issue 23): its JSON is checked by tests/cli/test_roll_cli.py and
# tests/integration/test_roll_zk.py; `features` (issue 36) by tests/kafka/test_real_kraft_features.py; `migration
# status` and `migration roll` (issue 36) by tests/kafka/test_real_migration.py at every phase of a real migration.
AFTER_GOLDEN = {"roll plan", "roll run", "features describe", "features upgrade", "migration status", "migration roll"}


def test_every_cluster_command_is_covered_in_both_modes() -> None:
    """Every command that takes a connection (found by walking kadmin's Typer app, as the completion scripts
    and test_real_kraft_every_command.py do, not listed by hand) has at least one case in each mode."""
    from kadmin.cli.help import leaves, option_names, root_command

    online = {path for path, cmd in leaves(root_command()) if "--bootstrap-server" in option_names(cmd)}
    assert online >= AFTER_GOLDEN, sorted(AFTER_GOLDEN - online)
    online -= AFTER_GOLDEN
    for mode, cs in MODES.items():
        covered = {" ".join(c.args[:2]) for c in cs}
        assert online <= covered, f"{mode}: no case for {sorted(online - covered)}"


@pytest.mark.parametrize("case", ZK_CASES, ids=lambda c: c.id)
def test_zookeeper_mode(zookeeper: Target, case: Case) -> None:
    run_case(zookeeper, "zookeeper", case)


def test_zookeeper_mode_golden() -> None:
    finish("zookeeper")


@pytest.mark.parametrize("case", KRAFT_CASES, ids=lambda c: c.id)
def test_kraft(kraft: Target, case: Case) -> None:
    run_case(kraft, "kraft", case)


def test_kraft_golden() -> None:
    finish("kraft")
