"""Broker ids completed from the cluster (issue 35 §4): bash's real completion function, against a real ZooKeeper
with emulated brokers registered in the test's chroot."""

from __future__ import annotations

from kadmin.sandbox.fleet import BrokerSpec
from tests.cli.test_completion import bash_complete


def test_bash_completes_broker_ids_from_the_current_contexts_cluster(fleet, zk, tmp_path):
    for broker in (3, 1, 12):
        fleet.register(BrokerSpec(broker, host=f"b{broker}", port=9092))
    cfg = tmp_path / "config" / "kadmin"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text(f'current-context = "lab"\n[contexts.lab]\nzookeeper = "{zk}"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}

    assert bash_complete(tmp_path, "kadmin", "brokers", "show", "", env=env) == (["1", "3", "12"], "")
    assert bash_complete(tmp_path, "kadmin", "brokers", "wait", "1", env=env)[0] == ["1", "12"]
    assert bash_complete(tmp_path, "kadmin", "partitions", "list", "--broker", "", env=env)[0] == ["1", "3", "12"]
    assert bash_complete(tmp_path, "kadmin", "ids", "map", "b3", "", env=env)[0] == ["1", "3", "12"]


def test_the_command_lines_own_cluster_wins_over_the_context(fleet, zk, tmp_path):
    fleet.register(BrokerSpec(7, host="b7", port=9092))
    cfg = tmp_path / "config" / "kadmin"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text('current-context = "gone"\n[contexts.gone]\nzookeeper = "127.0.0.1:1"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}

    assert bash_complete(tmp_path, "kadmin", "brokers", "show", "-z", zk, "", env=env) == (["7"], "")
    assert bash_complete(tmp_path, "kadmin", "brokers", "show", "", env={**env, "KADMIN_ZOOKEEPER": zk}) == (["7"], "")
    assert bash_complete(tmp_path, "kadmin", "brokers", "show", "", env=env) == ([], "")  # the context's: unreachable
