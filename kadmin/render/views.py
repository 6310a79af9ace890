"""How each command's data looks as a table (rich on a terminal, tabulate on a pipe)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class View:
    headers: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    title: str | None = None
    text: str | None = None  # plain output overriding the table (for `$(kadmin ...)`)


# C0 controls, DEL, C1 controls (0x9b is a one-byte CSI on some terminals), line and paragraph
# separators, and the bidirectional overrides ("Trojan Source"): never sent to a terminal as they are.
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _visible(m: re.Match[str]) -> str:
    c = m.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def inert(text: str, keep: str = "") -> str:
    """`text` with control characters shown as `\\x1b`-style escapes (those in `keep` left as they are).

    Strings from the cluster (hosts, raw znodes, ids) reach tables and plain columns through this, so
    a registration cannot set the terminal's title, clear the screen or forge rows; JSON keeps them exact.
    """
    if keep:
        return _UNSAFE.sub(lambda m: m.group() if m.group() in keep else _visible(m), text)
    return _UNSAFE.sub(_visible, text)


def cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (list, tuple)):
        return ",".join(cell(x) for x in v) if v else "-"
    if isinstance(v, dict):
        return ",".join(f"{inert(str(k))}={cell(x)}" for k, x in v.items()) if v else "-"
    return inert(str(v))


def fixed(cells: list[Any], widths: tuple[int, ...] = (24, 12, 6, 14, 14)) -> str:
    """A streamed row in fixed-width columns, so rows line up without buffering the stream."""
    parts = [cell(c).ljust(w) for c, w in zip(cells, widths, strict=False)] + [cell(c) for c in cells[len(widths):]]
    return " ".join(parts).rstrip()


def _brokers_list(data: list[dict[str, Any]]) -> View:
    rows = [
        [b["id"], b["host"], b["port"], b["rack"], b["epoch"], b["session"], b["is_controller"], b["state"],
         b["version"], b["endpoints"]]
        for b in data
    ]
    return View(["ID", "HOST", "PORT", "RACK", "EPOCH", "SESSION", "CONTROLLER", "STATE", "VERSION", "ENDPOINTS"], rows)


def _key_values(data: dict[str, Any]) -> View:
    rows: list[list[Any]] = []
    for k, v in data.items():
        if isinstance(v, dict) and k == "stat":
            rows += [[f"stat.{sk}", sv] for sk, sv in v.items()]
        else:
            rows.append([k, v])
    return View(["KEY", "VALUE"], rows)


def _max_epoch(data: dict[str, Any]) -> View:
    v = _key_values(data)
    v.text = "" if data["max_broker_epoch"] is None else str(data["max_broker_epoch"])
    return v


def _diff(data: dict[str, Any]) -> View:
    # each listing's epochs (a dead broker's OLD_EPOCH is in the saved listing, a new one's NEW_EPOCH live)
    old, new = data.get("old_epochs", {}), data.get("new_epochs", {})
    rows: list[list[Any]] = [[i, "new", None, new.get(i)] for i in data["new"]]
    rows += [[i, "dead", old.get(i), None] for i in data["dead"]]
    rows += [[b["id"], "bounced", b["old_epoch"], b["new_epoch"]] for b in data["bounced"]]
    rows += [[i, "unchanged", old.get(i), new.get(i)] for i in data["unchanged"]]
    rows.sort(key=lambda r: r[0])
    return View(["ID", "CHANGE", "OLD_EPOCH", "NEW_EPOCH"], rows)


def _events(data: list[dict[str, Any]]) -> View:
    return View(
        ["AT", "EVENT", "ID", "EPOCH", "OLD_EPOCH"],
        [[e["at"], e["event"], e["id"], e["epoch"], e["old_epoch"]] for e in data],
    )


def _wait(data: dict[str, Any]) -> View:
    if "in_sync" in data:  # --in-sync: the partitions still waiting for the broker
        v = View(["TOPIC", "PARTITION"], [[w["topic"], w["partition"]] for w in data["waiting"]])
        v.text = f"{data['broker_id']}\tin_sync\t{'met' if data['in_sync'] else 'not-met'}\t{len(data['waiting'])}"
        return v
    v = _key_values(data)
    v.text = f"{data['broker_id']}\t{data['condition']}\t{'met' if data['met'] else 'not-met'}\t{cell(data['epoch'])}"
    return v


def _generic(data: Any) -> View:
    if isinstance(data, dict):
        return _key_values(data)
    if isinstance(data, list) and data and isinstance(data[0], dict):
        headers = list(data[0])
        return View([h.upper() for h in headers], [[row.get(h) for h in headers] for row in data])
    return View(["VALUE"], [[data]])


def _sandbox(data: dict[str, Any]) -> View:
    if data.get("engine") == "kafka" and data.get("processes"):
        # real JVMs: one row per process (an epoch exists only in ZooKeeper mode)
        v = View(["ROLE", "ID", "PID", "PORT", "ALIVE", "REGISTERED", "EPOCH"],
                 [[p["role"], p["id"], p["pid"], p["port"], p["alive"], p["registered"],
                   data["brokers"].get(p["id"], data["brokers"].get(str(p["id"]))) if p["role"] == "broker" else None]
                  for p in data["processes"]])
    else:
        v = View(["ID", "EPOCH", "CONTROLLER"],
                 [[b, e, b == data.get("controller")] for b, e in data["brokers"].items()])
    v.text = data.get("zookeeper") or data.get("bootstrap_servers")
    return v


def _sandbox_down(data: dict[str, Any]) -> View:
    """One row per process the sandbox started: stopped now, or already gone (and why)."""
    rows = [[p["process"], p["pid"], "stopped", p["reason"]] for p in data["stopped"]]
    rows += [[p["process"], p["pid"], "already-gone", p["reason"]] for p in data["already_gone"]]
    return View(["PROCESS", "PID", "STATE", "REASON"], rows)


def _ids_hosts(data: list[dict[str, Any]]) -> View:
    return View(["HOST", "BROKER_ID", "REGISTERED", "REGISTERED_FROM"],
                [[m["host"], m["broker_id"], m["registered"], m["registered_from"]] for m in data])


def _min_isr_source(source: str) -> str:
    """One word per cell: "static (--min-isr-default)" is "static" in a table."""
    return "static" if source.startswith("static") else source


def _partitions(data: list[dict[str, Any]]) -> View:
    # MIN_ISR_SOURCE and DELETING come after the original columns, so scripts cutting fields keep working;
    # ELR and LAST_KNOWN_ELR (KIP-966, KRaft) are added last, and only when some partition has one
    elr = any(r.get("elr") or r.get("last_known_elr") for r in data)
    return View(
        ["TOPIC", "PARTITION", "LEADER", "LEADER_EPOCH", "PARTITION_EPOCH", "REPLICAS", "ISR", "MIN_ISR", "ADDING",
         "REMOVING", "MIN_ISR_SOURCE", "DELETING", *(["ELR", "LAST_KNOWN_ELR"] if elr else [])],
        [[r["topic"], r["partition"], r["leader"], r["leader_epoch"], r["partition_epoch"], r["replicas"], r["isr"],
          r["min_isr"], r["adding_replicas"], r["removing_replicas"], _min_isr_source(r["min_isr_source"]),
          "deleting" if r["deleting"] else "-", *([r.get("elr") or [], r.get("last_known_elr") or []] if elr else [])]
         for r in data],
    )


def _check(data: dict[str, Any]) -> View:
    return View(["TOPIC", "PARTITION", "REASONS"],
                [[f["topic"], f["partition"], "; ".join(f["reasons"])] for f in data["findings"]])


def _can_stop(data: dict[str, Any]) -> View:
    rows = [[b["topic"], b["partition"], "blocking", b["reason"]] for b in data["blocking"]]
    rows += [[b["topic"], b["partition"], "never", b["reason"]] for b in data["never_satisfiable"]]
    return View(["TOPIC", "PARTITION", "VERDICT", "REASON"], rows)


def _shutdown(data: dict[str, Any]) -> View:
    v = _key_values({k: v for k, v in data.items() if k not in ("remaining_partitions", "can_stop", "request")})
    v.rows.append(["remaining_partitions", [f"{r['topic']}-{r['partition']}" for r in data["remaining_partitions"]]])
    if data.get("request"):
        v.rows += [[f"request.{k}", x] for k, x in data["request"].items()]
    return v


def _check_id(data: dict[str, Any]) -> View:
    return View(["PATH", "VERSION", "NODE_ID", "CLUSTER_ID", "MATCH", "ERROR"],
                [[f["path"], f["version"], f["node_id"], f["cluster_id"], f["match"], f["error"]]
                 for f in data["files"]])


def _quorum(data: dict[str, Any]) -> View:
    order = {"Leader": 0, "Follower": 1, "Down": 2, "Observer": 3}
    reps = sorted(data["voters"] + data["observers"], key=lambda r: order.get(r["status"], 4))
    title = (f"cluster {data['cluster_id']}: leader {data['leader_id']}, epoch {data['leader_epoch']}, "
             f"high watermark {data['high_watermark']}, max follower lag {data['max_follower_lag']}")
    return View(["NODE_ID", "STATUS", "LOG_END_OFFSET", "LAG", "LAST_FETCH", "LAST_CAUGHT_UP", "DIRECTORY_ID",
                 "ENDPOINTS"],
                [[r["id"], r["status"], r["log_end_offset"], r["lag"], r["last_fetch_timestamp"],
                  r["last_caught_up_timestamp"], r["directory_id"], r["endpoints"]] for r in reps], title=title)


def _quorum_check(data: dict[str, Any]) -> View:
    return View(["LEVEL", "CODE", "MESSAGE"], [[f["level"], f["code"], f["message"]] for f in data["findings"]])


VIEWS: dict[str, Callable[[Any], View]] = {
    "brokers list": _brokers_list,
    "brokers show": _key_values,
    "brokers max-epoch": _max_epoch,
    "brokers diff": _diff,
    "brokers watch": _events,
    "brokers wait": _wait,
    "partitions list": _partitions,
    "partitions check": _check,
    "brokers can-stop": _can_stop,
    "brokers shutdown": _shutdown,
    "cluster check-id": _check_id,
    "quorum check": _quorum_check,
    "quorum describe": _quorum,
    "ids missing": lambda data: View(["BROKER_ID", "PARTITIONS", "MAPPED_HOST"],
                                     [[m["broker_id"], m["partitions"], m["mapped_host"]] for m in data]),
    "ids hosts": _ids_hosts,
    "sandbox up": _sandbox,
    "sandbox status": _sandbox,
    "sandbox down": _sandbox_down,
}


def view_for(command: str, data: Any) -> View:
    return VIEWS.get(command, _generic)(data)


# rich's width for a file that is no terminal is 80 columns (it cuts cells with "…"); a table written to a
# pipe or a file is for reading in full, so it gets the width it needs unless COLUMNS says otherwise
_UNBOUNDED = 100_000


def table_width(isatty: bool, environ: Mapping[str, str] | None = None) -> int | None:
    """The width for `-o table`: None on a terminal (rich measures it), else COLUMNS when it is a positive
    number, else unbounded (a table never grows past its content)."""
    if isatty:
        return None
    columns = (os.environ if environ is None else environ).get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else _UNBOUNDED
