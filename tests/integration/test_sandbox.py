"""`kadmin sandbox` end to end: real processes started, bounced and stopped by pid."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from kadmin.sandbox.zkserver import pid_alive

pytestmark = pytest.mark.integration


def kadmin(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kadmin", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_sandbox_lifecycle(tmp_path):
    env = {**os.environ, "KADMIN_SANDBOX_DIR": str(tmp_path / "sb")}
    up = kadmin("sandbox", "up", "--brokers", "4", "-o", "json", env=env)
    assert up.returncode == 0, up.stderr
    data = json.loads(up.stdout)["data"]
    zk = data["zookeeper"]
    assert zk.endswith("/kafka") and sorted(data["brokers"]) == ["1", "2", "3", "4"]
    pids = [m["pid"] for m in data["ensemble"]] + [data["daemon"]["pid"]]
    try:
        env["KADMIN_ZOOKEEPER"] = zk
        listed = json.loads(kadmin("brokers", "list", "-o", "json", env=env).stdout)["data"]
        assert [b["id"] for b in listed] == [1, 2, 3, 4]
        assert all(b["version"] == 5 and b["state"] == "registered" for b in listed)
        assert sum(b["is_controller"] for b in listed) == 1
        epochs = {b["id"]: b["epoch"] for b in listed}

        # idempotent: a second `up` reports the running sandbox
        again = kadmin("sandbox", "up", "-o", "json", env=env)
        assert again.returncode == 0 and json.loads(again.stdout)["data"]["already_running"] is True
        assert json.loads(again.stdout)["data"]["engine"] == "emulated"
        # ... but not as another kind of sandbox
        home = tmp_path / "kafka"
        (home / "libs").mkdir(parents=True)
        (home / "libs" / "kafka_2.13-3.9.1.jar").write_bytes(b"")
        other = kadmin("sandbox", "up", "--kafka-home", str(home), env=env)
        assert other.returncode == 3 and "another kind (emulated, zk mode) is running" in other.stderr

        b = json.loads(kadmin("sandbox", "bounce", "2", "-o", "json", env=env).stdout)["data"]
        assert b["old_epoch"] == epochs[2] and b["new_epoch"] > epochs[2]
        wait = kadmin("brokers", "wait", "2", "--epoch-gt", str(epochs[2]), "--timeout", "5", env=env)
        assert wait.returncode == 0

        controller = next(x["id"] for x in listed if x["is_controller"])
        assert kadmin("sandbox", "kill", str(controller), env=env).returncode == 0
        after = json.loads(kadmin("brokers", "list", "-o", "json", env=env).stdout)["data"]
        assert controller not in [x["id"] for x in after]
        assert sum(x["is_controller"] for x in after) == 1  # another broker took over
        assert kadmin("sandbox", "kill", str(controller), env=env).returncode == 1  # already stopped
        started = json.loads(kadmin("sandbox", "start", str(controller), "-o", "json", env=env).stdout)["data"]
        assert started["new_epoch"] > epochs[controller]

        # a hard kill leaves the registration until the session expires; `start` waits for that, as
        # a real broker started earlier would exit (NODEEXISTS) and the real engine waits too
        assert kadmin("sandbox", "kill", "3", "--hard", env=env).returncode == 0
        restarted = kadmin("sandbox", "start", "3", "-o", "json", env=env)
        assert restarted.returncode == 0, restarted.stderr
        assert json.loads(restarted.stdout)["data"]["new_epoch"] > epochs[3]

        status = kadmin("sandbox", "status", "-o", "json", env=env)
        assert status.returncode == 0 and len(json.loads(status.stdout)["data"]["brokers"]) == 4
    finally:
        down = kadmin("sandbox", "down", "-o", "json", env=env)
    assert down.returncode == 0
    assert not any(pid_alive(p) for p in pids)
    assert kadmin("sandbox", "status", env=env).returncode == 3  # no sandbox any more


def test_a_crashed_controller_is_replaced_after_its_session_expires(fleet, run):
    from kadmin.sandbox.fleet import BrokerSpec

    for i in (1, 2, 3):
        fleet.register(BrokerSpec(i))
    assert fleet.fleet.controller_id == 1
    fleet.crash(1)  # no close: ZooKeeper expires the session (4 s here)
    r = run("brokers", "wait", "1", "--gone", "--timeout", "20")
    assert r.exit_code == 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        rows = json.loads(run("brokers", "list", "-o", "json").stdout)["data"]
        if any(b["is_controller"] for b in rows):
            break
        time.sleep(0.1)
    assert [b["id"] for b in rows if b["is_controller"]] == [2]


# ---------------------------------------------------------------------------- down touches only its own processes
def write_state(directory, daemon: dict, zookeeper: list[dict]) -> None:
    from kadmin.sandbox.manager import STATE_VERSION

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "state.json").write_text(json.dumps({
        "version": STATE_VERSION, "dir": str(directory), "connect": "127.0.0.1:1/kafka", "chroot": "/kafka",
        "brokers": 1, "zookeeper": zookeeper, "daemon": daemon}))


@pytest.fixture
def unrelated():
    """A live process the sandbox did not start (it stands for whatever reused a recorded pid)."""
    p = subprocess.Popen(["sleep", "300"])
    yield p
    p.kill()
    p.wait()


def dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_down_signals_no_process_it_did_not_start(tmp_path, unrelated):
    from kadmin.sandbox.manager import Sandbox, identity_after_exec

    ident = identity_after_exec(unrelated.pid, ["sleep", "300"])  # Popen can return before exec shows its argv
    assert ident is not None and ident["cmdline"] == ["sleep", "300"]
    reused = {**ident, "start": str(int(ident["start"]) - 1)}  # the pid once named an earlier process
    rebooted = {**ident, "boot_id": "a-boot-before-this-one"}
    legacy_gone = dead_pid()
    d = tmp_path / "sb"
    write_state(d, daemon={"pid": unrelated.pid, "port": None, "identity": reused},
                zookeeper=[{"myid": 1, "port": 1, "pid": unrelated.pid, "data_dir": str(d / "zk1"),
                            "identity": rebooted},
                           {"myid": 2, "port": 1, "pid": unrelated.pid, "data_dir": str(d / "zk2")},  # no identity
                           {"myid": 3, "port": 1, "pid": dead_pid(), "data_dir": str(d / "zk3"),
                            "identity": {**ident, "start": "1"}},
                           {"myid": 4, "port": 1, "pid": legacy_gone, "data_dir": str(d / "zk4")}])
    sb = Sandbox(d)
    assert not sb.running()
    status = sb.status()
    assert status["daemon"]["alive"] is False and not any(m["alive"] for m in status["ensemble"])

    out = sb.down()
    assert out["stopped"] == []
    reasons = {g["process"]: g["reason"] for g in out["already_gone"]}
    assert reasons == {"brokers": "pid reused by another process",
                       "zookeeper1": "started before the last reboot",
                       "zookeeper2": "pid now runs another program (no recorded start time)",
                       "zookeeper3": "not running", "zookeeper4": "not running"}
    assert unrelated.poll() is None  # never signalled
    assert not (d / "state.json").exists()


def test_down_stops_the_processes_it_started(tmp_path, run_nozk):
    from kadmin.sandbox.manager import Sandbox, identity_after_exec, process_identity

    d = tmp_path / "sb"
    # stand-ins with the command lines `up` gives them: the daemon's names the directory, ZooKeeper's its zoo.cfg
    daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "kadmin.sandbox.daemon", str(d)])
    zk = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", str(d / "zk1" / "zoo.cfg")])
    try:
        daemon_identity = identity_after_exec(daemon.pid, daemon.args)
        # the old entry is known by its command line alone: wait until the stand-in has exec'd (under load its
        # command line read empty just after Popen, and the sandbox did not count as running: run 12)
        assert identity_after_exec(zk.pid, zk.args) is not None
        write_state(d, daemon={"pid": daemon.pid, "port": None, "identity": daemon_identity},
                    zookeeper=[{"myid": 0, "port": 1, "pid": zk.pid, "data_dir": str(d / "zk1")}])  # an old entry
        assert Sandbox(d).running()
        code, doc, err = run_nozk.json("sandbox", "down", "--dir", str(d))
        assert code == 0, err
        assert [(s["process"], s["pid"]) for s in doc["data"]["stopped"]] == [("brokers", daemon.pid),
                                                                            ("zookeeper", zk.pid)]
        assert doc["data"]["already_gone"] == []
        # down reaped them (they are this process's children, as after an in-process `up`)
        assert process_identity(daemon.pid) is None and process_identity(zk.pid) is None
    finally:
        for p in (daemon, zk):
            if p.poll() is None:
                p.kill()
                p.wait()


# ---------------------------------------------------------------------------- real-Kafka engine: refusals (no JVM)
def fake_kafka_home(tmp_path, *jars: str):
    home = tmp_path / "kafka"
    (home / "libs").mkdir(parents=True)
    for j in jars:
        (home / "libs" / j).write_bytes(b"")
    return home


@pytest.mark.parametrize(("jars", "args", "code", "says"), [
    (None, (), 3, "no libs/ directory"),
    ((), (), 3, "no kafka_2.13-<version>.jar"),
    (("kafka-clients-3.9.1.jar",), (), 3, "no server"),
    (("kafka_2.13-4.3.1.jar", "kafka-clients-4.3.1.jar"), (), 3, "ZooKeeper mode was removed in Kafka 4.0"),
    (("kafka_2.13-4.3.1.jar",), ("--mode", "zk"), 3, "Kafka 4.3.1"),
])
def test_sandbox_up_refuses_an_unusable_kafka_home_in_one_line(tmp_path, jars, args, code, says):
    home = fake_kafka_home(tmp_path, *jars) if jars is not None else tmp_path / "not-kafka"
    if jars is None:
        home.mkdir()
    env = {**os.environ, "KADMIN_SANDBOX_DIR": str(tmp_path / "sb")}
    r = kadmin("sandbox", "up", "--kafka-home", str(home), *args, env=env)
    assert r.returncode == code, r.stderr
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1 and says in r.stderr
    assert r.stderr.startswith("kadmin: error: ") and "Traceback" not in r.stderr
    assert not (tmp_path / "sb" / "state.json").exists()  # nothing was started


def test_sandbox_up_kafka_needs_java_and_kraft_needs_kafka(tmp_path):
    env = {**os.environ, "KADMIN_SANDBOX_DIR": str(tmp_path / "sb"), "PATH": str(tmp_path / "empty-bin")}
    env.pop("KADMIN_KAFKA_HOME", None)
    home = fake_kafka_home(tmp_path, "kafka_2.13-3.9.1.jar")
    r = kadmin("sandbox", "up", "--kafka-home", str(home), env=env)
    assert r.returncode == 3 and r.stderr.strip() == (
        "kadmin: error: no `java` on PATH: install a JRE (apt-get install -y default-jre-headless)")
    r = kadmin("sandbox", "up", "--mode", "kraft", env=env)
    assert r.returncode == 2 and "--mode kraft needs real Kafka" in r.stderr
    # KADMIN_KAFKA_HOME is --kafka-home
    r = kadmin("sandbox", "up", "--mode", "kraft", env={**env, "KADMIN_KAFKA_HOME": str(home.parent / "nowhere")})
    assert r.returncode == 3 and "nowhere: no libs/ directory" in r.stderr


@pytest.mark.parametrize("args", [["--controllers", "2", "--mode", "kraft"], ["--controllers", "1"],
                                  ["--controllers", "1", "--mode", "migration"]])
def test_sandbox_up_controllers_is_1_or_3_with_kraft_in_one_line(tmp_path, args):
    env = {**os.environ, "KADMIN_SANDBOX_DIR": str(tmp_path / "sb")}
    r = kadmin("sandbox", "up", "--kafka-home", str(fake_kafka_home(tmp_path, "kafka_2.13-3.9.1.jar")), *args, env=env)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr.strip() == "kadmin: error: --controllers must be 1 or 3, with --mode kraft (a migration sandbox " \
                               "has 3)"
    assert not (tmp_path / "sb" / "state.json").exists()


def test_a_just_started_process_is_recorded_with_the_command_line_it_execs(tmp_path):
    """Popen returns while the child is still inside execve; the recorded identity must be the exec'd
    program's, or `down` would take the process for another one and leave it running."""
    from kadmin.sandbox.manager import identity_after_exec, still_ours

    procs = []
    try:
        for i in range(20):
            argv = ["sleep", f"{300 + i}"]
            p = subprocess.Popen(argv)
            procs.append(p)
            ident = identity_after_exec(p.pid, argv)
            assert ident is not None and ident["cmdline"] == argv
            assert still_ours({"pid": p.pid, "identity": ident}, [])[0]
    finally:
        for p in procs:
            p.kill()
            p.wait()
