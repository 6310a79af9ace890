"""The drain file an operator must undo with is written atomically (issue 22 §2): a SIGKILL at any point leaves
no file or a complete one, never a truncated one (it used to be written in place: SIGKILL left 0 bytes).

A real process writes a large drain file through kadmin's own `write_file` and is SIGKILLed while its
temporary file is being written, observed on disk (no sleeps); then what is at the file's name is checked.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kadmin.errors import UsageError
from kadmin.services.drain import read_file, write_file

WRITER = """
import sys
from pathlib import Path
from kadmin.services.drain import write_file
parts = [{"topic": f"topic-{i // 50}", "partition": i % 50, "replicas": [1, 2, 3]} for i in range(COUNT)]
write_file(Path(sys.argv[1]), {"version": 1, "kind": "kadmin-drain", "broker_id": 1, "created": "now",
                               "cluster": {"mode": "protocol", "where": "b:9092", "id": "abc"}, "partitions": parts})
"""


def killed_while_writing(path: Path, partitions: int) -> bool:
    """Start a writer, SIGKILL it once its temporary file exists (True), or let it end if it wins (False)."""
    proc = subprocess.Popen([sys.executable, "-c", WRITER.replace("COUNT", str(partitions)), str(path)],
                            stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            if any(p.name.startswith(f".{path.name}.tmp-") for p in path.parent.iterdir()):
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
                return True
        return False
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


@pytest.mark.integration
def test_sigkill_while_writing_leaves_no_file_or_a_complete_one(tmp_path: Path) -> None:
    kills = 0
    for i in range(5):
        path = tmp_path / f"run-{i}" / "drain.json"
        path.parent.mkdir()
        kills += killed_while_writing(path, 300_000)
        if path.exists():  # the link happened: the whole file is there
            saved = read_file(path, 1)
            assert len(saved.order) == 300_000 and saved.cluster_id == "abc"
        else:
            with pytest.raises(UsageError, match="--from"):
                read_file(path, 1)
    assert kills >= 1  # at least one kill landed mid-write (each write takes well over a millisecond)


def test_an_existing_file_is_never_overwritten_and_no_temporary_is_left(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"keep": True}))
    with pytest.raises(UsageError, match="exists"):
        write_file(path, {"version": 1})
    assert json.loads(path.read_text()) == {"keep": True} and [p.name for p in tmp_path.iterdir()] == ["d.json"]
