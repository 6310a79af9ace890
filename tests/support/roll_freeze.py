"""kadmin's own CLI with a freeze point, to put a SIGKILL (or anything else) exactly between two steps of a roll.

`python -m tests.support.roll_freeze SPEC MARKER ARGS...` runs `kadmin ARGS` (kadmin.cli.app:main), except that
once the roll's journal has written and fsynced the first event matching SPEC (a JSON object: every key of it
must equal the event's, e.g. {"event": "step", "node": 2, "step": "wait_stopped", "status": "done"}), the
process writes that event to MARKER and stops there, in the thread that journaled it, before the event goes to
stdout and before anything the roll does next; it goes on once MARKER.go exists. SPEC {"call": "reassign"}
freezes instead right after a drain's reordering was sent (LeadershipMoves.reassign returned: ZkDrain or
AdminDrain), before the election and before `drain done`: a drain killed mid-way. A test waits for MARKER (the
fact), then SIGKILLs the process (a crash at exactly that point: what the journal holds is what a SIGKILL landing
there leaves) or creates MARKER.go (a pause, e.g. to change the cluster between two nodes).

Nothing else of kadmin is changed: the events, the hooks, the gates and the exit are the real ones.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def freeze(marker: Path, what: Mapping[str, Any]) -> None:
    tmp = marker.with_name(marker.name + ".tmp")
    tmp.write_text(json.dumps(dict(what)))
    tmp.replace(marker)
    go = marker.with_name(marker.name + ".go")
    while not go.exists():
        time.sleep(0.02)


def install(spec: Mapping[str, Any], marker: Path) -> None:
    from kadmin.domain import roll_events
    from kadmin.services import roll_journal

    state = {"hit": False}
    if "call" in spec:
        from kadmin.cluster import drain

        for cls in (drain.ZkDrain, drain.AdminDrain):
            real_call = getattr(cls, spec["call"])

            def call(self: Any, *a: Any, _real: Any = real_call, **kw: Any) -> Any:
                out = _real(self, *a, **kw)
                if not state["hit"]:
                    state["hit"] = True
                    freeze(marker, dict(spec))
                return out

            setattr(cls, spec["call"], call)
        return
    real = roll_journal.Journal.append

    def append(self: Any, event: Any) -> None:
        real(self, event)
        obj = roll_events.to_json(event)
        if not state["hit"] and all(obj.get(k) == v for k, v in spec.items()):
            state["hit"] = True
            freeze(marker, obj)

    roll_journal.Journal.append = append  # type: ignore[method-assign]


def main(argv: list[str]) -> None:
    spec, marker, args = json.loads(argv[0]), Path(argv[1]), argv[2:]
    install(spec, marker)
    from kadmin.cli.app import main as kadmin_main

    sys.argv = ["kadmin", *args]
    kadmin_main()  # exits the process with kadmin's code


if __name__ == "__main__":
    main(sys.argv[1:])
