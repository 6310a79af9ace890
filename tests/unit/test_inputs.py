"""kadmin.inputs.read_input: a file named on the command line is a regular file under a size limit (issue 22 §3).

Each refusal is a UsageError (exit 2) on one line naming the flag, the path and why; a missing file is the
OSError its caller words. A FIFO or a device is refused from its stat, before anything opens it.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kadmin.errors import UsageError
from kadmin.exit_codes import ExitCode
from kadmin.inputs import MAX_INPUT_BYTES, MIB, InputRefused, read_input, size_text


def refused(path: str | Path, flag: str = "--since", **kw: int) -> InputRefused:
    with pytest.raises(InputRefused) as e:
        read_input(path, flag, **kw)
    assert isinstance(e.value, UsageError) and e.value.exit_code == ExitCode.USAGE
    assert "\n" not in e.value.message
    return e.value


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path: a UNIX socket's path is limited to ~107 bytes."""
    d = Path(tempfile.mkdtemp(prefix="kin-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_a_small_regular_file_is_read_whole(tmp_path):
    f = tmp_path / "listing.json"
    f.write_bytes(b'{"data": []}\n')
    assert read_input(f, "--since") == b'{"data": []}\n'
    assert read_input(str(f), "--since") == b'{"data": []}\n'
    (tmp_path / "empty").write_bytes(b"")
    assert read_input(tmp_path / "empty", "--since") == b""


def test_the_limit_is_64_mib_and_a_file_of_exactly_the_limit_is_read(tmp_path):
    assert MAX_INPUT_BYTES == 64 * 1024 * 1024
    f = tmp_path / "f"
    f.write_bytes(b"x" * 10)
    assert read_input(f, "--since", limit=10) == b"x" * 10
    e = refused(f, limit=9)
    assert e.message == f"--since {f}: is 10 bytes, over the 9 bytes limit"


def test_dev_zero_is_a_character_device():
    e = refused("/dev/zero")
    assert e.message == "--since /dev/zero: not a regular file (a character device)"
    assert e.reason == "not a regular file (a character device)" and e.flag == "--since" and e.path == "/dev/zero"


def test_a_fifo_without_a_writer_is_refused_at_once(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    result: list[BaseException | bytes] = []

    def attempt() -> None:
        try:
            result.append(read_input(fifo, "--from"))
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            result.append(e)

    t = threading.Thread(target=attempt, daemon=True)
    started = time.monotonic()
    t.start()
    t.join(5)
    if t.is_alive():  # unblock it (a writer opens the FIFO) so no thread is left hanging
        with open(fifo, "wb"):
            pass
        pytest.fail("read_input blocked on a FIFO")
    assert time.monotonic() - started < 5
    assert isinstance(result[0], InputRefused)
    assert result[0].message == f"--from {fifo}: not a regular file (a FIFO or pipe)"


def test_a_directory_and_a_socket_are_refused(tmp_path, short_dir):
    assert refused(tmp_path, "--command-config").message == \
        f"--command-config {tmp_path}: not a regular file (a directory)"
    path = short_dir / "s"
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(path))
        assert refused(path).reason == "not a regular file (a socket)"
    finally:
        s.close()


def test_a_pipe_from_process_substitution_is_refused():
    r, w = os.pipe()
    try:
        assert refused(f"/dev/fd/{r}").reason == "not a regular file (a FIFO or pipe)"
    finally:
        os.close(r)
        os.close(w)


def test_a_sparse_file_over_the_limit_is_refused_without_reading_it(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(65 * MIB)  # sparse: no 65 MiB written
    assert refused(big).message == f"--since {big}: is 65 MiB, over the 64 MiB limit"
    with open(big, "r+b") as f:
        f.truncate(MAX_INPUT_BYTES + 1)
    assert refused(big).reason == "is 67,108,865 bytes, over the 64 MiB limit"


def test_a_file_that_grows_past_the_limit_while_read_is_refused():
    """/proc files say size 0 and then hold more: what a file growing between fstat and read looks like."""
    status = Path("/proc/self/status")
    if not status.exists():
        pytest.skip("no /proc")
    assert read_input(status, "--since")  # under the limit: read whole although its size says 0
    assert refused(status, limit=16).reason == "grew past the 16 bytes limit while being read"


def test_a_symlink_to_a_regular_file_is_read_and_to_a_device_refused(tmp_path):
    target = tmp_path / "target"
    target.write_bytes(b"ok")
    (tmp_path / "good").symlink_to(target)
    (tmp_path / "zero").symlink_to("/dev/zero")
    assert read_input(tmp_path / "good", "--since") == b"ok"
    assert refused(tmp_path / "zero").reason == "not a regular file (a character device)"


def test_missing_and_unreadable_files_are_left_to_the_caller(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_input(tmp_path / "nope", "--since")
    with pytest.raises(NotADirectoryError):
        (tmp_path / "file").write_bytes(b"")
        read_input(tmp_path / "file" / "below", "--since")


def test_what_swapped_in_after_the_stat_is_checked_again(tmp_path, monkeypatch):
    """The descriptor is checked after the open: a path changed between the stat and the open is caught."""
    f = tmp_path / "f"
    f.write_bytes(b"x")
    real_fstat = os.fstat

    def fstat_of_a_directory(fd: int) -> os.stat_result:
        return os.stat(tmp_path) if fd > 2 else real_fstat(fd)

    monkeypatch.setattr(os, "fstat", fstat_of_a_directory)
    assert refused(f).reason == "not a regular file (a directory)"


@pytest.mark.parametrize("n, text", [
    (0, "0 bytes"), (64 * MIB, "64 MiB"), (70 * MIB, "70 MiB"), (64 * MIB + MIB // 2, "64.5 MiB"),
    (64 * MIB + 1, "67,108,865 bytes"), (1000, "1,000 bytes"),
])
def test_size_text(n, text):
    assert size_text(n) == text
