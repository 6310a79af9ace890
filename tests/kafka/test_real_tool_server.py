"""The warm tool JVM (tests/support/tool_server.py) answers as a fresh JVM of the same tool does: the tests'
referees (TopicCommand, MetadataQuorumCommand) run there, so a difference would bend every comparison with them.

Each case runs once through `tool()` (served) and once as `java ... MAIN ARGS` (fresh): the exit code, stdout and
stderr must be equal (a stack trace only up to the tool's own frames: below them the served one shows the
server's; a log line's time and its admin client's number aside). The cases end through every path
a tool has: a normal exit from its `main`, an exit from deep inside it (usage, version), an exception it catches
and prints."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.support import tool_server
from tests.support.kafka import KAFKA_3_9, KAFKA_4, kafka_home, tool, tool_argv

TOPICS = "org.apache.kafka.tools.TopicCommand"
QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
CASES = [
    (TOPICS, ["--help"]),
    (TOPICS, ["--version"]),
    (TOPICS, ["--bootstrap-server", "127.0.0.1:1", "--bogus"]),
    (TOPICS, ["--bootstrap-server", "127.0.0.1:1", "--list", "--command-config", "/nonexistent/admin.properties"]),
    (QUORUM, ["--bogus"]),
    (QUORUM, ["--bootstrap-server", "127.0.0.1:1", "describe", "--bogus"]),
]


def own_frames(text: str) -> list[str]:
    """The text with each stack trace cut after its last frame of Kafka or its libraries (not reflection's), log
    lines without their time, and admin clients without their number (the JVM's nth: a served one counts on)."""
    lines = [re.sub(r"adminclient-\d+", "adminclient-N", re.sub(r"^\[[0-9-]+ [0-9:,]+\] ", "", ln))
             for ln in text.splitlines()]
    keep: list[str] = []
    for ln in lines:
        if ln.startswith("\tat ") and not any(p in ln for p in ("org.apache.kafka", "kafka.", "joptsimple",
                                                              "net.sourceforge.argparse4j", "java.base/java.nio",
                                                              "java.base/sun.nio")):
            continue
        keep.append(ln)
    return keep


@pytest.mark.parametrize("version", [KAFKA_4, KAFKA_3_9])
@pytest.mark.parametrize(("main", "args"), CASES, ids=[f"{m.split('.')[-1]} {a[-1]}" for m, a in CASES])
def test_a_served_tool_answers_as_a_fresh_jvm(version: str, main: str, args: list[str]) -> None:
    home = kafka_home(version)
    assert main in tool_server.SERVED
    served = tool(home, main, *args, check=False, timeout=120)
    assert tool_server._servers[str(home)].proc.poll() is None  # it was served, and the server lives on
    fresh = subprocess.run(tool_argv(home, main, *args), capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
    assert served.returncode == fresh.returncode != 0 or args == ["--version"] and served.returncode == 0
    assert served.stdout == fresh.stdout
    assert own_frames(served.stderr) == own_frames(fresh.stderr)
    assert str(tool_server.SOURCE) not in served.args  # what ran is named as the fresh command line


# The other served tools, each with the words that end it early: argparse4j's tools (FeatureCommand, ClusterTool)
# call System.exit there, which ends the server as it would end the tool's own JVM; the others end through
# Kafka's Exit or an exception out of `main`.
MORE = [
    ("org.apache.kafka.tools.FeatureCommand", ["--bogus"]),
    ("org.apache.kafka.tools.FeatureCommand", ["--help"]),
    ("org.apache.kafka.tools.ClusterTool", ["--bogus"]),
    ("org.apache.kafka.tools.ClusterTool", ["--help"]),
    ("org.apache.kafka.tools.LeaderElectionCommand", ["--bogus"]),
    ("org.apache.kafka.tools.LeaderElectionCommand", ["--help"]),
    ("org.apache.kafka.tools.reassign.ReassignPartitionsCommand", ["--bogus"]),
    ("kafka.admin.ConfigCommand", ["--bogus"]),
    ("org.apache.kafka.tools.GetOffsetShell", ["--bogus"]),
    # (its --help's list of operations comes from a hash set: two fresh JVMs may order it differently)
    ("acl", ["--bootstrap-server", "127.0.0.1:1", "--list", "--command-config", "/nonexistent/admin.properties"]),
]


@pytest.mark.parametrize("version", [KAFKA_4, KAFKA_3_9])
@pytest.mark.parametrize(("main", "args"), MORE, ids=[f"{m.split('.')[-1]} {a[-1]}" for m, a in MORE])
def test_every_served_tool_answers_as_a_fresh_jvm_even_when_it_calls_system_exit(version: str, main: str,
                                                                                   args: list[str]) -> None:
    home = kafka_home(version)
    if main == "acl":  # Scala's kafka.admin.AclCommand until 4.0, Java's after
        main = "org.apache.kafka.tools.AclCommand" if version == KAFKA_4 else "kafka.admin.AclCommand"
    assert main in tool_server.SERVED
    tool(home, TOPICS, "--version")  # a server is up for this installation
    before = tool_server._servers[str(home)]
    served = tool(home, main, *args, check=False, timeout=120)
    assert tool_server._servers[str(home)] is before  # it went to the server, not to a fresh JVM
    fresh = subprocess.run(tool_argv(home, main, *args), capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
    assert served.returncode == fresh.returncode, (served.stderr, fresh.stderr)
    assert own_frames(served.stdout) == own_frames(fresh.stdout)  # AclCommand prints its stack trace there
    assert own_frames(served.stderr) == own_frames(fresh.stderr)
    if main.endswith(".ClusterTool") and args == ["--bogus"]:  # argparse4j's parseArgsOrFail: System.exit(1)
        assert before.proc.poll() is not None  # it ended the server as it ends a tool's JVM, and answered
    # whether the tool ended the server (System.exit) or not, the next call is served, and right
    assert tool(home, TOPICS, "--version").stdout == f"{version}\n"


def test_the_server_survives_its_calls_and_a_dead_one_is_replaced() -> None:
    home = kafka_home(KAFKA_4)
    first = tool(home, TOPICS, "--version").stdout
    s = tool_server._servers[str(home)]
    assert tool(home, TOPICS, "--version").stdout == first and tool_server._servers[str(home)] is s
    s.proc.kill()
    s.proc.wait()
    assert tool(home, TOPICS, "--version").stdout == first == f"{KAFKA_4}\n"
    assert tool_server._servers[str(home)] is not s


def test_an_installation_whose_server_cannot_start_runs_its_tools_in_fresh_jvms(monkeypatch, tmp_path, capsys):
    """A JVM that cannot run ToolServer.java (a JRE without the source launcher's compiler; here a source file that
    is not there) has taken no call: every call for that installation runs as a fresh JVM, said once on stderr."""
    monkeypatch.setattr(tool_server, "_servers", {})
    monkeypatch.setattr(tool_server, "_unserved", {})
    monkeypatch.setattr(tool_server, "SOURCE", tmp_path / "Missing.java")
    home = kafka_home(KAFKA_4)
    for _ in range(2):
        r = tool(home, TOPICS, "--version")
        assert (r.returncode, r.stdout) == (0, f"{KAFKA_4}\n") and str(tmp_path) not in " ".join(r.args)
    assert tool_server._servers == {} and list(tool_server._unserved) == [str(home)]
    err = capsys.readouterr().err
    assert err.count("run in fresh JVMs: the tool server did not start") == 1 and "Missing.java" in err
