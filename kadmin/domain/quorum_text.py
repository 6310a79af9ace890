"""`kafka-metadata-quorum describe` output, byte for byte (Kafka 3.9's MetadataQuorumCommand).

`--status`: labels padded to column 24. `--replication`: every cell left-aligned and padded to the
column's widest value, a TAB after every cell including the last; the leader first, then the other
voters, then the observers; `-1` for absent timestamps even with --human-readable;
`AAAAAAAAAAAAAAAAAAAAAA` for an absent directory id.
"""

from __future__ import annotations

from kadmin.domain.quorum import QuorumState, ReplicaState, lag, max_follower_lag, rows

ZERO_UUID_TEXT = "AAAAAAAAAAAAAAAAAAAAAA"
REPLICATION_HEADERS = ["NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp",
                       "Status"]


def _label(name: str) -> str:
    return f"{name + ':':<24}"


def _replica_entry(r: ReplicaState) -> str:
    text = f'{{"id": {r.id}, "directoryId": ' + (f'"{r.directory_id}"' if r.directory_id else "null")
    if r.endpoints:
        text += ', "endpoints": [' + ", ".join(f'"{e}"' for e in r.endpoints) + "]"
    return text + "}"


def status_text(q: QuorumState) -> str:
    """Requires a leader among the voters (the caller reports its absence as an error)."""
    ml = max_follower_lag(q)
    assert ml is not None, "status_text needs a leader"
    lines = [
        _label("ClusterId") + str(q.cluster_id),
        _label("LeaderId") + str(q.leader_id),
        _label("LeaderEpoch") + str(q.leader_epoch),
        _label("HighWatermark") + str(q.high_watermark),
        _label("MaxFollowerLag") + str(ml.lag),
        _label("MaxFollowerLagTimeMs") + str(ml.lag_time_ms),
        _label("CurrentVoters") + "[" + ", ".join(_replica_entry(v) for v in q.voters) + "]",
        _label("CurrentObservers") + "[" + ", ".join(_replica_entry(o) for o in q.observers) + "]",
    ]
    return "\n".join(lines) + "\n"


def _timestamp(ts: int | None, human_readable: bool, now_ms: int) -> str:
    if ts is None:
        return "-1"
    if not human_readable:
        return str(ts)
    return f"{max(0, now_ms - ts)} ms ago"


def replication_text(q: QuorumState, human_readable: bool = False, now_ms: int = 0) -> str:
    table = [REPLICATION_HEADERS]
    for r, st in rows(q):
        lg = lag(q, r)
        table.append([
            str(r.id),
            r.directory_id or ZERO_UUID_TEXT,
            str(r.log_end_offset),
            str(lg if lg is not None else -1),
            _timestamp(r.last_fetch_timestamp, human_readable, now_ms),
            _timestamp(r.last_caught_up_timestamp, human_readable, now_ms),
            st,
        ])
    widths = [max(len(row[i]) for row in table) for i in range(len(REPLICATION_HEADERS))]
    return "".join("".join(f"{cell:<{w}}\t" for cell, w in zip(row, widths, strict=True)) + "\n" for row in table)
