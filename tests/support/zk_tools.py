"""ZooKeeper's own TxnLogToolkit on a server's transaction logs, and its output parsed.

Used by tests/integration/test_zk_logs.py (kadmin's parser against the toolkit) and by
tests/kafka/test_real_zk_history.py (the partition states real Kafka wrote, as ground truth).

`TxnLogToolkit -d LOG` prints a header line, then one record per txn: a start line (date, session,
cxid, zxid, type) followed by the txn's fields, and at the end "EOF reached after N txns.". Plain
txns print their fields as text (`create path,data,acl,ephemeral,parentCVersion` with a newline inside
the ACL; `setData path,data,version`). A `multi` prints each sub-txn as `name:` followed by its raw
jute bytes decoded as UTF-8 (a byte that is not UTF-8, such as a length's or an error code's, shows as
U+FFFD), `;` between them:

- create: 4-byte path length, path, 4-byte data length, data, the ACLs, 4-byte flags
- setData: 4-byte path length, path, 4-byte data length, data, 4-byte version (the new one)
- check: 4-byte path length, path, 4-byte version
- error: 4-byte error code; a multi that failed holds only these (it changed nothing)

Raw bytes may hold newlines, so records are cut at the lines that start one, not at newlines; and
the toolkit ends a record with a newline only if its text does not already end with one.
"""

from __future__ import annotations

import json
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TOOLKIT = "org.apache.zookeeper.server.persistence.TxnLogToolkit"

RECORD_RE = re.compile(r"^[^\n]*? session 0x([0-9a-f]+) cxid 0x([0-9a-f]+) zxid 0x([0-9a-f]+) ([A-Za-z0-9]+)(?: |$)",
                       re.M)
# Request.op2String names of the sub-txns a multi may hold; the toolkit prints each as `name:` + raw jute bytes
SUB_RE = re.compile(r"(?:^|;)(create|create2|createContainer|createTtl|createTTL|delete|deleteContainer|setData"
                    r"|setACL|check|error):")
Row = tuple[int, int, int, str, Any]
Record = tuple[int, int, int, str, str]  # (session, cxid, zxid, type as printed, the rest of the record)


def java(cp: str, main: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["java", "-Dfile.encoding=UTF-8", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                             "-cp", cp, main, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def run_toolkit(cp: str, logs: list[Path], workers: int = 4) -> dict[Path, str]:
    """`TxnLogToolkit -d` stdout per log file, `workers` JVMs at a time (a small machine runs many logs)."""

    def one(log: Path) -> str:
        proc = java(cp, TOOLKIT, "-d", str(log))
        out, _ = proc.communicate()
        assert proc.returncode == 0, f"TxnLogToolkit {log.name}: exit {proc.returncode}"
        return out.decode("utf-8", "replace")

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip(logs, pool.map(one, logs), strict=True))


def toolkit_records(text: str) -> tuple[int, list[Record]]:
    """(N of "EOF reached after N txns.", records): each txn's (session, cxid, zxid, type, body), the
    body being everything after the type up to the next record's start line: it ends with a newline,
    which the toolkit adds unless the txn's text already ends with one (a raw byte 0x0a, say)."""
    m = re.search(r"EOF reached after (\d+) txns\.", text)
    assert m, text[-500:]
    starts = list(RECORD_RE.finditer(text))
    records: list[Record] = []
    for i, rec in enumerate(starts):
        body = text[rec.end() : starts[i + 1].start() if i + 1 < len(starts) else m.start()]
        records.append((int(rec.group(1), 16), int(rec.group(2), 16), int(rec.group(3), 16), rec.group(4), body))
    return int(m.group(1)), records


def toolkit_rows(text: str) -> tuple[int, list[Row]]:
    """(N of "EOF reached after N txns.", rows) with (session, cxid, zxid, type, detail) per txn.

    A create spans 2 lines (the ACL's toString has a newline) and a multi prints raw bytes that may hold
    newlines, so records are cut at the lines that start one, not at newlines.
    """
    count, records = toolkit_records(text)
    rows: list[Row] = []
    for session, cxid, zxid, printed, body in records:
        typ = printed.lower()
        detail: Any
        if typ in ("create", "create2", "createcontainer", "createttl", "setdata"):
            detail = body.split(",", 1)[0]  # path,data,acl,...
        elif typ in ("delete", "deletecontainer"):
            detail = body.strip().lstrip("'")
        elif typ == "setacl":
            detail = body.lstrip("'").split(",", 1)[0]
        elif typ == "closesession":  # v{'/a,'/b}
            detail = tuple(re.findall(r"'([^,}]*)", body.split("\n")[0]))
        elif typ in ("error", "createsession"):
            detail = int(body.split()[0])
        elif typ == "multi":
            subs = []
            for sm in SUB_RE.finditer(body):
                sub_type = sm.group(1).lower()
                # after `name:` come the sub-txn's jute bytes: a 4-byte length, then the path
                path = re.match(r"/[\x20-\x7e]*", body[sm.end() + 4 :])
                subs.append((sub_type, path.group(0) if path and sub_type != "error" else None))
            detail = tuple(subs)
        else:
            detail = body
        rows.append((session, cxid, zxid, typ, detail))
    return count, rows


@dataclass(frozen=True)
class Write:
    """A create or setData of a znode holding JSON, as the toolkit printed it (plain or inside a multi)."""

    zxid: int
    type: str  # "create" | "setData"
    path: str
    doc: Any  # the data, JSON-decoded
    version: int | None  # the znode's version after the write as logged (0 for a create); None if not legible
    in_multi: bool


_JSON = json.JSONDecoder()


def _be_int(chars: str, last: bool) -> int | None:
    """A 4-byte big-endian int printed as UTF-8, if no byte of it was replaced (U+FFFD). At the end of
    a record (`last`) the toolkit adds a newline, unless the text already ends with one (a byte 0x0a)."""
    raw = chars.encode("utf-8")
    if last and len(raw) == 5 and raw.endswith(b"\n"):
        raw = raw[:-1]
    return int.from_bytes(raw, "big") if len(raw) == 4 and "\ufffd" not in chars else None


def toolkit_writes(text: str, paths: re.Pattern[str]) -> list[Write]:
    """Every create and setData of a path `paths` fullmatches, in log order, with its data JSON-decoded.

    Other txns (and the check and error sub-txns of a multi) are left out; a failed multi holds only
    error sub-txns, so none of its writes is listed."""
    _, records = toolkit_records(text)
    out: list[Write] = []
    for _, _, zxid, printed, body in records:
        typ = printed.lower()
        if typ in ("create", "create2", "setdata"):
            path, _, rest = body.partition(",")
            if not paths.fullmatch(path):
                continue
            doc, end = _JSON.raw_decode(rest)
            version: int | None = 0
            if typ == "setdata":
                m = re.fullmatch(r",(\d+)\n?", rest[end:])
                assert m, f"zxid {zxid:#x}: {body!r}"
                version = int(m.group(1))
            out.append(Write(zxid, "setData" if typ == "setdata" else "create", path, doc, version, False))
        elif typ == "multi":
            subs = list(SUB_RE.finditer(body))
            for i, sm in enumerate(subs):
                name = sm.group(1)
                if name not in ("create", "create2", "setData"):
                    continue
                seg = body[sm.end() : subs[i + 1].start() if i + 1 < len(subs) else len(body)]
                pm = re.match(r"/[\x20-\x7e]*", seg[4:])  # after the path's 4-byte length
                if pm is None or not paths.fullmatch(pm.group(0)):
                    continue
                start = 4 + pm.end() + 4  # after the path and the data's 4-byte length
                assert seg[start : start + 1] == "{", f"zxid {zxid:#x}: {seg!r}"
                doc, end = _JSON.raw_decode(seg, start)
                version = _be_int(seg[end:], i + 1 == len(subs)) if name == "setData" else 0
                out.append(Write(zxid, "setData" if name == "setData" else "create", pm.group(0), doc, version, True))
    return out
