"""Files named on the command line are regular files of at most 64 MiB (issue 22 §3), through real command lines.

`brokers diff --since`, `brokers undrain --from`, `--command-config` (and `--zk-auth @FILE`, the `--zk-tls-*`
files, `--meta-properties`, `cluster check-id`'s files): /dev/zero, a FIFO, a directory, a UNIX socket and a 65 MiB
sparse file are each refused with exit 2 and one line naming the option, the path and why, before anything reads
them; a FIFO makes no command wait (a real `python -m kadmin` under a timeout). A good small file goes on to the
next step.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

NOWHERE_ZK = ["-z", "127.0.0.1:1", "--connect-timeout", "0.5"]
NOWHERE_KAFKA = ["-b", "127.0.0.1:1", "--connect-timeout", "0.5"]

# option -> the command line that reads FILE through it
COMMANDS: dict[str, Callable[[str], list[str]]] = {
    "--since": lambda f: ["brokers", "diff", "--since", f, *NOWHERE_ZK],
    "--from": lambda f: ["brokers", "undrain", "4", "--from", f, *NOWHERE_ZK],
    "--command-config": lambda f: ["brokers", "list", "--command-config", f, *NOWHERE_KAFKA],
    "--zk-auth": lambda f: ["brokers", "list", "--zk-auth", f"@{f}", *NOWHERE_ZK],
    # read by kazoo's ssl context itself, not by kadmin: checked before it opens them
    "--zk-tls-ca": lambda f: ["brokers", "list", "--zk-tls", "--zk-tls-ca", f, *NOWHERE_ZK],
    "--zk-tls-cert": lambda f: ["brokers", "list", "--zk-tls", "--zk-tls-cert", f, *NOWHERE_ZK],
    "--zk-tls-key": lambda f: ["brokers", "list", "--zk-tls", "--zk-tls-key", f, *NOWHERE_ZK],
}
WHAT = {"--zk-auth": lambda f: f"--zk-auth @{f}"}


@pytest.fixture
def place() -> Iterator[Path]:
    """A short directory (a UNIX socket's path is limited to ~107 bytes)."""
    d = Path(tempfile.mkdtemp(prefix="kin-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def the_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("kadmin: error: ")]
    assert len(errors) == 1 and all(line.startswith("kadmin: ") for line in lines), stderr
    return errors[0].removeprefix("kadmin: error: ")


@pytest.mark.parametrize("option", list(COMMANDS))
@pytest.mark.parametrize("kind", ["character device", "directory", "socket", "too large"])
def test_what_is_not_a_small_regular_file_is_refused(run_nozk, place, option, kind):
    s = None
    if kind == "character device":
        path, why = "/dev/zero", "not a regular file (a character device)"
    elif kind == "directory":
        path, why = str(place), "not a regular file (a directory)"
    elif kind == "socket":
        path, why = str(place / "s"), "not a regular file (a socket)"
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)
    else:
        path, why = str(sparse(place / "big", 65 * 1024 * 1024)), "is 65 MiB, over the 64 MiB limit"
    try:
        r = run_nozk(*COMMANDS[option](path))
        assert r.exit_code == 2, r.stderr
        assert the_error(r.stderr) == f"{WHAT.get(option, lambda f: f'{option} {f}')(path)}: {why}"
        j = run_nozk(*COMMANDS[option](path), "-o", "json")
        doc = json.loads(j.stdout)
        assert j.exit_code == 2 and doc["exit_code"] == 2 and doc["status"] == "error"
        assert [e["code"] for e in doc["errors"]] == ["usage"] and why in doc["errors"][0]["message"]
    finally:
        if s is not None:
            s.close()


@pytest.mark.parametrize("option", list(COMMANDS))
def test_a_fifo_never_makes_a_command_wait(place, option):
    fifo = place / "fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    try:
        p = subprocess.run([sys.executable, "-m", "kadmin", *COMMANDS[option](str(fifo))], capture_output=True,
                           text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{option} FIFO: kadmin waited for a writer")
    assert time.monotonic() - started < 20
    assert p.returncode == 2, p.stderr
    assert the_error(p.stderr) == f"{WHAT.get(option, lambda f: f'{option} {f}')(fifo)}: not a regular file " \
                                  "(a FIFO or pipe)"


def test_a_good_small_file_goes_on_to_the_next_step(run_nozk, tmp_path):
    listing = tmp_path / "brokers.json"
    listing.write_text(json.dumps({"kadmin_result_version": 2, "command": "brokers list", "data": []}))
    r = run_nozk(*COMMANDS["--since"](str(listing)))
    assert r.exit_code == 4 and "127.0.0.1:1" in the_error(r.stderr), r.stderr  # read, then the cluster is asked
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=PLAINTEXT\n")
    r = run_nozk(*COMMANDS["--command-config"](str(props)))
    assert r.exit_code == 4, r.stderr
    auth = tmp_path / "zk-auth"
    auth.write_text("digest:u:pw\n")
    r = run_nozk(*COMMANDS["--zk-auth"](str(auth)))
    assert r.exit_code == 4, r.stderr
    not_a_drain_file = tmp_path / "drain.json"
    not_a_drain_file.write_text('{"partitions": 1}')
    r = run_nozk(*COMMANDS["--from"](str(not_a_drain_file)))
    error = the_error(r.stderr)
    assert r.exit_code == 2 and error.startswith(f"--from {not_a_drain_file}: ") and "regular file" not in error


def test_a_missing_file_keeps_its_own_message(run_nozk, tmp_path):
    nope = str(tmp_path / "nope")
    r = run_nozk(*COMMANDS["--since"](nope))
    assert r.exit_code == 2 and the_error(r.stderr) == f"--since {nope}: cannot read: No such file or directory"
    r = run_nozk(*COMMANDS["--command-config"](nope))
    assert r.exit_code == 3 and the_error(r.stderr) == f"--command-config {nope}: cannot read: No such file or " \
                                                       "directory"


def test_the_to_file_of_a_diff_is_named_as_to(run_nozk, tmp_path):
    since = tmp_path / "since.json"
    since.write_text(json.dumps({"kadmin_result_version": 2, "command": "brokers list", "data": []}))
    r = run_nozk("brokers", "diff", "--since", str(since), "--to", "/dev/zero")
    assert r.exit_code == 2 and the_error(r.stderr) == "--to /dev/zero: not a regular file (a character device)"


def test_a_keystore_the_command_config_names_is_a_regular_file_too(run_nozk, tmp_path):
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=SSL\nssl.truststore.location=/dev/zero\n")
    r = run_nozk(*COMMANDS["--command-config"](str(props)))
    assert r.exit_code == 2, r.stderr
    assert the_error(r.stderr) == "ssl.truststore.location /dev/zero: not a regular file (a character device)"


def test_meta_properties_and_check_id_files(run, fleet, tmp_path):
    """`ids resolve --meta-properties` and `cluster check-id FILE...` against a live ZooKeeper."""
    big = sparse(tmp_path / "meta.properties", 65 * 1024 * 1024)
    r = run("ids", "resolve", "--host", "h1", "--meta-properties", str(big))
    assert r.exit_code == 2 and the_error(r.stderr) == f"--meta-properties {big}: is 65 MiB, over the 64 MiB limit"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code, doc, stderr = run.json("cluster", "check-id", str(fifo), "/dev/zero")
    assert code == 2, stderr
    assert stderr == (f"kadmin: {fifo}: not a regular file (a FIFO or pipe); "  # the result's message, one line
                      "/dev/zero: not a regular file (a character device)\n")
    assert [f["error"] for f in doc["data"]["files"]] == ["not a regular file (a FIFO or pipe)",
                                                         "not a regular file (a character device)"]


# ------------------------------------------------------------------------------------------------ issue 34 §5
def unnamed(argv, env, timeout=60):
    try:
        return subprocess.run([sys.executable, "-m", "kadmin", *argv], capture_output=True, text=True,
                              timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{argv}: kadmin waited for a writer")


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_a_device_as_the_contexts_file_stops_no_command(tmp_path, kind):
    """Issue 34 §5: `$XDG_CONFIG_HOME/kadmin/config.toml`, a file no flag names, is checked as a named one is: a
    FIFO there hung every command (an open that waits for a writer), a device was read forever. Exit 3, one line."""
    cfg = tmp_path / "kadmin" / "config.toml"
    cfg.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(cfg)
    else:
        cfg.symlink_to("/dev/zero")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KADMIN_")}, "XDG_CONFIG_HOME": str(tmp_path)}
    for argv in (["brokers", "list", "--context", "prod"], ["partitions", "check", "--context", "prod"]):
        p = unnamed(argv, env)
        assert p.returncode == 3, (argv, p.stderr)
        what = "a FIFO or pipe" if kind == "fifo" else "a character device"
        assert the_error(p.stderr) == f"{cfg}: not a regular file ({what})", p.stderr


def test_a_fifo_among_a_metadata_dirs_segments_hangs_nothing(tmp_path):
    """`brokers list --metadata-dir DIR` reads the files of DIR/__cluster_metadata-0 it finds by name: one that is a
    FIFO named like a segment is refused (exit 2, naming it), never opened for a writer that will not come."""
    part = tmp_path / "__cluster_metadata-0"
    part.mkdir()
    seg = part / "00000000000000000000.log"
    os.mkfifo(seg)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KADMIN_")}
    p = unnamed(["brokers", "list", "--metadata-dir", str(tmp_path)], env)
    assert p.returncode == 2, p.stderr
    assert the_error(p.stderr) == f"--metadata-dir {seg}: not a regular file (a FIFO or pipe)", p.stderr
