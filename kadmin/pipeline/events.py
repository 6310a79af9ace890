"""Source records → history events. Pure functions (no Spark): they run inside the executors.

One event row: cluster, source, position (zxid or offset), ts (ms), event, broker_id, epoch,
session, topic, partition, leader, leader_epoch, isr, controller_id, detail (JSON text), sub
(the index of the event within its record, so one record's events stay distinct), and topic_id (the
KRaft topic id, also in detail: a column of its own so that the pipeline joins topic names without
parsing detail's JSON on every partition record; it is not written to the table).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any

from kadmin.domain.znodes import loads_strict

ZK, KRAFT, NDJSON = "zk-txnlog", "kraft-log", "kadmin-ndjson"
COLUMNS = ("cluster", "source", "position", "ts_ms", "event", "broker_id", "epoch", "session", "topic", "partition",
           "leader", "leader_epoch", "isr", "controller_id", "detail", "sub", "topic_id")

_BROKER = re.compile(r"^(?P<root>.*)/brokers/ids/(?P<id>\d+)$")
_CONTROLLER = re.compile(r"^(?P<root>.*)/controller$")
_CONTROLLER_EPOCH = re.compile(r"^(?P<root>.*)/controller_epoch$")
_TOPIC = re.compile(r"^(?P<root>.*)/brokers/topics/(?P<topic>[^/]+)$")
_STATE = re.compile(r"^(?P<root>.*)/brokers/topics/(?P<topic>[^/]+)/partitions/(?P<p>\d+)/state$")


def row(cluster: str, source: str, position: int, ts_ms: int, event: str, sub: int = 0, **kw: Any) -> dict[str, Any]:
    r: dict[str, Any] = dict.fromkeys(COLUMNS)
    r.update(cluster=cluster, source=source, position=position, ts_ms=ts_ms, event=event, sub=sub)
    r.update(kw)
    return r


def _json(data: bytes | None) -> dict[str, Any] | None:
    try:
        doc = loads_strict((data or b"").decode("utf-8"))
    except ValueError:  # UnicodeDecodeError too
        return None
    return doc if isinstance(doc, dict) else None


def _root_ok(root: str, chroot: str | None) -> bool:
    return chroot is None or root == chroot.rstrip("/")


def zk_events(txn: Any, cluster: str, chroot: str | None = None, file: str | None = None) -> Iterator[dict[str, Any]]:
    """Events of one ZooKeeper transaction (a kadmin.formats.zk_txnlog.Txn); a multi's sub-txns share
    its zxid, which is the czxid of the znodes it creates (KIP-380's broker epoch)."""
    if txn.type == "unknown":
        yield row(cluster, ZK, txn.zxid, txn.time_ms, "unknown", session=f"0x{txn.session:x}",
                  detail=json.dumps({"type_code": txn.type_code, "file": file, "offset": txn.offset}))
        return
    if txn.failed or txn.type == "error":
        return
    ops = txn.sub if txn.type == "multi" else (txn,)
    sub = 0
    for op in ops:
        for ev in _zk_op(op, txn, cluster, chroot):
            ev["sub"] = sub
            sub += 1
            yield ev


def _zk_op(op: Any, txn: Any, cluster: str, chroot: str | None) -> Iterator[dict[str, Any]]:
    pos, ts, session = txn.zxid, txn.time_ms, f"0x{txn.session:x}"
    path = op.path or ""
    if op.type in ("create", "create2", "createContainer", "createTTL"):
        if m := _BROKER.match(path):
            if _root_ok(m["root"], chroot):
                yield row(cluster, ZK, pos, ts, "broker_registered", broker_id=int(m["id"]), epoch=pos,
                          session=session, detail=_root_detail(m["root"]))
        elif m := _CONTROLLER.match(path):
            doc = _json(op.data)
            if _root_ok(m["root"], chroot) and doc is not None and isinstance(doc.get("brokerid"), int):
                yield row(cluster, ZK, pos, ts, "controller_changed", controller_id=doc["brokerid"], session=session,
                          detail=_root_detail(m["root"]))
        elif m := _TOPIC.match(path):
            if _root_ok(m["root"], chroot) and not path.endswith("/partitions"):
                yield row(cluster, ZK, pos, ts, "topic_created", topic=m["topic"], detail=_root_detail(m["root"]))
        elif m := _STATE.match(path):
            yield from _state(m, op.data, cluster, pos, ts, chroot)
    elif op.type in ("setData",):
        if m := _STATE.match(path):
            yield from _state(m, op.data, cluster, pos, ts, chroot)
        elif m := _CONTROLLER_EPOCH.match(path):
            try:
                epoch = int((op.data or b"").decode())
            except ValueError:
                return
            if _root_ok(m["root"], chroot):
                yield row(cluster, ZK, pos, ts, "controller_epoch_changed", epoch=epoch, detail=_root_detail(m["root"]))
        elif (m := _BROKER.match(path)) and _root_ok(m["root"], chroot) and op.version is not None and op.version > 1:
            yield row(cluster, ZK, pos, ts, "broker_updated", broker_id=int(m["id"]), detail=_root_detail(m["root"]))
    elif op.type in ("delete", "deleteContainer"):
        yield from _deleted(path, cluster, pos, ts, session, chroot)
    elif op.type == "closeSession":
        for p in op.paths:
            yield from _deleted(p, cluster, pos, ts, session, chroot)


def zk_snapshot_events(node: Any, cluster: str, chroot: str | None = None) -> Iterator[dict[str, Any]]:
    """The registrations and the controller a ZooKeeper snapshot holds (a kadmin.formats.zk_snapshot.SnapNode),
    as the events of the transactions that created them: same position (the czxid), time (ctime),
    session and sub-index, so their ids match the log's and ingesting both adds each once. This is
    what tells the epochs of brokers whose registration is older than the oldest log kept."""
    path = node.path or ""
    if (m := _BROKER.match(path)) and _root_ok(m["root"], chroot):
        yield row(cluster, ZK, node.czxid, node.ctime, "broker_registered", broker_id=int(m["id"]), epoch=node.czxid,
                  session=f"0x{node.ephemeral_owner:x}", detail=_root_detail(m["root"]))
    elif (m := _CONTROLLER.match(path)) and _root_ok(m["root"], chroot):
        doc = _json(node.data)
        if doc is not None and isinstance(doc.get("brokerid"), int):
            yield row(cluster, ZK, node.czxid, node.ctime, "controller_changed", controller_id=doc["brokerid"],
                      session=f"0x{node.ephemeral_owner:x}", detail=_root_detail(m["root"]))


def _deleted(path: str, cluster: str, pos: int, ts: int, session: str, chroot: str | None) -> Iterator[dict[str, Any]]:
    if (m := _BROKER.match(path)) and _root_ok(m["root"], chroot):
        yield row(cluster, ZK, pos, ts, "broker_deregistered", broker_id=int(m["id"]), session=session,
                  detail=_root_detail(m["root"]))
    elif (m := _CONTROLLER.match(path)) and _root_ok(m["root"], chroot):
        yield row(cluster, ZK, pos, ts, "controller_changed", controller_id=-1, session=session,
                  detail=_root_detail(m["root"]))
    elif (m := _TOPIC.match(path)) and _root_ok(m["root"], chroot):
        yield row(cluster, ZK, pos, ts, "topic_deleted", topic=m["topic"], detail=_root_detail(m["root"]))


def _state(m: re.Match[str], data: bytes | None, cluster: str, pos: int, ts: int,
           chroot: str | None) -> Iterator[dict[str, Any]]:
    """A partition state write; the pipeline classifies it (leader_changed / isr_changed) against the
    previous state of the same partition."""
    doc = _json(data)
    if doc is None or not _root_ok(m["root"], chroot):
        return
    isr = doc.get("isr")
    yield row(cluster, ZK, pos, ts, "partition_state", topic=m["topic"], partition=int(m["p"]),
              leader=doc.get("leader"), leader_epoch=doc.get("leader_epoch"),
              isr=[int(x) for x in isr] if isinstance(isr, list) else None,
              controller_id=None, epoch=doc.get("controller_epoch"), detail=_root_detail(m["root"]))


@lru_cache(maxsize=64)
def _root_detail(root: str) -> str | None:
    return json.dumps({"chroot": root}) if root else None


# ---------------------------------------------------------------------------- KRaft
def kraft_events(rec: Any, cluster: str) -> Iterator[dict[str, Any]]:
    """Events of one metadata record (a kadmin.formats.kraft_log.MetadataRecord). Partition records
    name a topic id: the pipeline joins it with TopicRecord's name."""
    f: Mapping[str, Any] = rec.fields
    pos, ts, name = rec.offset, rec.timestamp_ms, rec.type_name

    def r(event: str, sub: int = 0, **kw: Any) -> dict[str, Any]:
        return row(cluster, KRAFT, pos, ts, event, sub, **kw)

    if name == "RegisterBrokerRecord":
        yield r("broker_registered", broker_id=f.get("broker_id"), epoch=f.get("broker_epoch"),
                detail=json.dumps({"fenced": f.get("fenced"), "rack": f.get("rack"),
                                   "incarnation_id": f.get("incarnation_id")}))
    elif name == "UnregisterBrokerRecord":
        yield r("broker_deregistered", broker_id=f.get("broker_id"), epoch=f.get("broker_epoch"))
    elif name in ("FenceBrokerRecord", "UnfenceBrokerRecord"):
        yield r("broker_fenced" if name == "FenceBrokerRecord" else "broker_unfenced", broker_id=f.get("id"),
                epoch=f.get("epoch"))
    elif name == "BrokerRegistrationChangeRecord":
        fenced, sub = f.get("fenced", 0), 0
        if fenced in (1, -1):
            yield r("broker_fenced" if fenced == 1 else "broker_unfenced", broker_id=f.get("broker_id"),
                    epoch=f.get("broker_epoch"))
            sub = 1
        if f.get("in_controlled_shutdown") == 1:
            yield r("broker_controlled_shutdown", sub, broker_id=f.get("broker_id"), epoch=f.get("broker_epoch"))
    elif name == "TopicRecord":
        yield r("topic_created", topic=f.get("name"), detail=json.dumps({"topic_id": f.get("topic_id")}),
                topic_id=f.get("topic_id"))
    elif name == "RemoveTopicRecord":
        yield r("topic_deleted", detail=json.dumps({"topic_id": f.get("topic_id")}), topic_id=f.get("topic_id"))
    elif name == "PartitionRecord":
        yield r("partition_state", partition=f.get("partition_id"), leader=f.get("leader"),
                leader_epoch=f.get("leader_epoch"), isr=list(f.get("isr") or []),
                detail=json.dumps({"topic_id": f.get("topic_id")}), topic_id=f.get("topic_id"))
    elif name == "PartitionChangeRecord":
        leader = f.get("leader", -2)
        isr = f.get("isr")
        yield r("partition_change", partition=f.get("partition_id"),
                leader=None if leader == -2 else leader, isr=None if isr is None else list(isr),
                detail=json.dumps({"topic_id": f.get("topic_id")}), topic_id=f.get("topic_id"))
    elif name == "LeaderChangeMessage":
        yield r("quorum_leader_changed", leader=f.get("leader_id"), leader_epoch=rec.leader_epoch,
                detail=json.dumps({"voters": [_get(v, "voter_id") for v in f.get("voters") or []]}))
    elif name == "unknown":
        yield r("unknown", detail=json.dumps({"api_key": rec.api_key, "version": rec.version}))


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


# ---------------------------------------------------------------------------- kadmin's NDJSON
def ndjson_events(lines: Iterable[str], cluster: str, file: str) -> Iterator[dict[str, Any]]:
    """`kadmin brokers list -o ndjson` rows (a registration seen, at its epoch) and `kadmin brokers
    watch -o ndjson` events."""
    for n, line in enumerate(lines):
        try:
            doc = loads_strict(line)
        except ValueError:
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("id"), int):
            continue
        if "event" in doc:  # brokers watch
            ts = _iso_ms(doc.get("at"))
            ev = {"registered": "broker_registered", "bounced": "broker_registered",
                  "deregistered": "broker_deregistered", "updated": "broker_updated"}.get(doc["event"])
            if ev is None or ts is None:
                continue
            epoch = doc.get("epoch") if ev != "broker_deregistered" else doc.get("old_epoch")
            yield row(cluster, NDJSON, epoch or n, ts, ev, broker_id=doc["id"], epoch=epoch,
                      detail=json.dumps({"file": file, "old_epoch": doc.get("old_epoch")}))
        elif isinstance(doc.get("epoch"), int):  # brokers list
            ts = doc.get("timestamp_ms")
            yield row(cluster, NDJSON, doc["epoch"], ts if isinstance(ts, int) else 0, "broker_registered",
                      broker_id=doc["id"], epoch=doc["epoch"], session=doc.get("session"),
                      detail=json.dumps({"file": file, "seen_in": "brokers list"}))


def _iso_ms(text: Any) -> int | None:
    from datetime import datetime

    if not isinstance(text, str):
        return None
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None
