"""`kafka-metadata-quorum describe` output, byte for byte (Kafka's MetadataQuorumCommand).

`--status`: labels padded to column 24. `--replication`: every cell left-aligned and padded to the
column's widest value, a TAB after every cell including the last; the leader first, then the other
voters, then the observers; `-1` for absent timestamps even with --human-readable;
`AAAAAAAAAAAAAAAAAAAAAA` for an absent directory id. Both are made from `quorum describe`'s payload
(kadmin/payloads.py: QuorumDescription), as its JSON is: the text and the JSON cannot disagree.

The text differs by the tool's version (`TOOL_FORMATS`, checked against the real 3.9.1 and 4.3.1
tools and the 3.8.0 source):
- "3.8" (3.4 to 3.8): no DirectoryId column; CurrentVoters/CurrentObservers are ids, `[3001,3002]`.
- "3.9" (3.9, 4.0): `{"id": N, "directoryId": null|"...", "endpoints": [...]}` per replica.
- "4.1" (4.1+, the default): as 3.9, but the directoryId key is left out when a replica has none.
"""

from __future__ import annotations

from kadmin.payloads import QuorumDescription, QuorumReplica

ZERO_UUID_TEXT = "AAAAAAAAAAAAAAAAAAAAAA"
TOOL_FORMATS = ("4.1", "3.9", "3.8")
DEFAULT_TOOL_FORMAT = "4.1"
REPLICATION_HEADERS = ["NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp",
                       "Status"]


def _label(name: str) -> str:
    return f"{name + ':':<24}"


class ClockDrift(ValueError):
    """A timestamp --human-readable cannot show as "N ms ago" (MetadataQuorumCommand.relativeTimeMs)."""


def _replica_entry(r: QuorumReplica, tool_format: str) -> str:
    text = f'{{"id": {r.id}'
    if r.directory_id:
        text += f', "directoryId": "{r.directory_id}"'
    elif tool_format == "3.9":
        text += ', "directoryId": null'
    if r.endpoints:
        text += ', "endpoints": [' + ", ".join(f'"{e}"' for e in r.endpoints) + "]"
    return text + "}"


def _replicas(replicas: tuple[QuorumReplica, ...], tool_format: str) -> str:
    if tool_format == "3.8":
        return "[" + ",".join(str(r.id) for r in replicas) + "]"
    return "[" + ", ".join(_replica_entry(r, tool_format) for r in replicas) + "]"


def status_text(q: QuorumDescription, tool_format: str = DEFAULT_TOOL_FORMAT) -> str:
    """Requires a leader among the voters (the caller reports its absence as an error)."""
    assert q.max_follower_lag is not None, "status_text needs a leader"
    lines = [
        _label("ClusterId") + str(q.cluster_id),
        _label("LeaderId") + str(q.leader_id),
        _label("LeaderEpoch") + str(q.leader_epoch),
        _label("HighWatermark") + str(q.high_watermark),
        _label("MaxFollowerLag") + str(q.max_follower_lag),
        _label("MaxFollowerLagTimeMs") + str(q.max_follower_lag_time_ms),
        _label("CurrentVoters") + _replicas(q.voters, tool_format),
        _label("CurrentObservers") + _replicas(q.observers, tool_format),
    ]
    return "\n".join(lines) + "\n"


def _timestamp(ts: int | None, human_readable: bool, now_ms: int, desc: str) -> str:
    if ts is None:
        return "-1"
    if not human_readable:
        return str(ts)
    if not 0 < ts <= now_ms:  # Kafka's relativeTimeMs: after the epoch and not in the future, else it fails
        raise ClockDrift("Error while computing relative time, possible drift in system clock. "
                         f"Current timestamp is {now_ms}, {desc} timestamp is {ts}")
    return f"{now_ms - ts} ms ago"


def rows(q: QuorumDescription) -> list[QuorumReplica]:
    """The replication table's order: the leader, the other voters, then the observers (domain.quorum.rows).
    The leader is the first voter whose status is Leader: a voter before it with its id is Down."""
    leader = next((v for v in q.voters if v.status == "Leader"), None)
    return [*([] if leader is None else [leader]), *(v for v in q.voters if v is not leader), *q.observers]


def replication_text(q: QuorumDescription, human_readable: bool = False, now_ms: int = 0,
                     tool_format: str = DEFAULT_TOOL_FORMAT) -> str:
    """Raises ClockDrift, with --human-readable, for a timestamp after now_ms (or not after the epoch)."""
    headers = [h for h in REPLICATION_HEADERS if h != "DirectoryId" or tool_format != "3.8"]
    table = [headers]
    for r in rows(q):
        table.append([
            str(r.id),
            *([] if tool_format == "3.8" else [r.directory_id or ZERO_UUID_TEXT]),
            str(r.log_end_offset),
            str(r.lag if r.lag is not None else -1),
            _timestamp(r.last_fetch_timestamp, human_readable, now_ms, "last fetch"),
            _timestamp(r.last_caught_up_timestamp, human_readable, now_ms, "last caught up"),
            r.status,
        ])
    widths = [max(len(row[i]) for row in table) for i in range(len(headers))]
    return "".join("".join(f"{cell:<{w}}\t" for cell, w in zip(row, widths, strict=True)) + "\n" for row in table)
