"""Which test modules start a real cluster of their own, and why the worker's shared one would not do.

Starting a real Kafka cluster costs 15-50 s of a worker (JVMs, a quorum, registrations); a ZooKeeper a few
seconds. Each pytest-xdist worker has shared ones, started at most once per worker and reused by every module
that asks: `zk_server` (tests/conftest.py: a ZooKeeper; a test takes a fresh chroot of it), `shared_zk_kafka`
(tests/kafka/conftest.py: three Kafka 3.9.1 brokers in ZooKeeper mode; tests take it as `zk_kafka`). A module
using a shared cluster creates its own topics and leaves every node as it found it (up; nothing drained or
reconfigured).

tests/unit/test_suite_clusters.py reads every test file and fails when one starts a cluster (calls one of
STARTERS) without an entry here saying why a shared one would not do, or when an entry is left for a module
that no longer starts one.
"""

from __future__ import annotations

# The calls that start a real server or cluster (tests/support/kafka.py, tests/support/sandbox.py,
# kadmin.sandbox.zkserver): a new helper that starts one belongs here too.
STARTERS = frozenset({"sandbox", "sandboxed", "zk_mode_cluster", "RealCluster", "ZkModeBroker", "Ensemble",
                      "ZkServer", "started", "secure_kraft", "SecureKraft", "combined_up", "rack_up", "rack_sandbox"})

# Where the shared clusters themselves are started, and the helpers that start clusters for the modules below.
SHARED = frozenset({"tests/conftest.py", "tests/kafka/conftest.py", "tests/support/kafka.py",
                    "tests/support/sandbox.py", "tests/support/migration.py", "tests/support/roll_clusters.py",
                    "tests/support/secure_kraft.py", "tests/support/clusters.py"})

OWN_CLUSTER = {
    # ZooKeeper servers
    "tests/integration/test_ensemble.py": "ensembles of 3 whose members it stops and partitions",
    "tests/integration/test_quorum_tls.py": "a ZooKeeper with a TLS quorum port and unified ports",
    "tests/integration/test_quorum_zk.py": "a lonely ensemble member and a ZooKeeper with a 4lw whitelist",
    "tests/integration/test_tls.py": "a ZooKeeper with a TLS client port (the session's is plain)",
    "tests/integration/test_zk_logs.py": "ZooKeeper 3.8 and 3.9 servers whose transaction logs it reads",
    "tests/pipeline/conftest.py": "a ZooKeeper whose whole transaction log is the pipeline's input",
    "tests/pipeline/test_standalone.py": "a ZooKeeper beside a standalone Spark master it starts and stops",
    # kadmin's own sandbox (the thing under test)
    "tests/cli/test_new_user.py": "`kadmin sandbox up` as a new user runs it (emulated brokers)",
    "tests/integration/test_sandbox.py": "`kadmin sandbox` itself with emulated brokers: up, bounce, down",
    "tests/integration/test_exit_codes_provoked.py": "sandboxes it breaks to provoke each exit code",
    "tests/kafka/test_real_sandbox.py": "`kadmin sandbox` itself: up, kill, start, down of real Kafka",
    # real Kafka with a configuration of its own, or nodes stopped and restarted
    "tests/kafka/test_real_deadlines.py": "freezes and stops ZooKeeper and controllers under kadmin's deadlines",
    "tests/kafka/test_real_drain.py": "drains and stops brokers, and reassigns partitions",
    "tests/kafka/test_real_json_shapes.py": "golden listings of the whole cluster: no other module's topics",
    "tests/kafka/test_real_kraft_brokers.py": "fences, stops and unregisters brokers; a 3.9.1 KRaft cluster too",
    "tests/kafka/test_real_kraft_elr.py": "min.insync.replicas 2 and brokers stopped; 3.9.1 in KRaft mode too",
    "tests/kafka/test_real_kraft_every_command.py": "runs every mutating command (drain, roll, unregister)",
    "tests/kafka/test_real_kraft_features.py": "upgrades metadata.version from 3.9 (a cluster formatted at 3.9)",
    "tests/kafka/test_real_kraft_history.py": "a metadata log of its own history, read back offline",
    "tests/kafka/test_real_kraft_partitions.py": "brokers stopped and min ISR configs; 3.9.1 in KRaft mode too",
    "tests/kafka/test_real_kraft_quorum.py": "its own quorum fetch timeouts; 3.9.1 in KRaft mode too",
    "tests/kafka/test_real_kraft_acl.py": "SASL and the StandardAuthorizer, restricted principals, a far-away broker",
    "tests/kafka/test_real_kraft39_hidden.py": "SASL and ACLs on Kafka 3.9.1 in KRaft mode",
    "tests/kafka/test_real_kraft_quorum_check.py": "stops and restarts controllers of its quorum",
    "tests/kafka/test_real_kraft_scale.py": "20,000 partitions",
    "tests/kafka/test_real_migration.py": "a ZooKeeper-mode cluster migrated to KRaft (and 4.3.1), one rolled back",
    "tests/kafka/test_real_producer_harness.py": "stops brokers under VerifiableProducer (min ISR 2 topic)",
    "tests/kafka/test_real_roll.py": "rolls every node of its clusters; replaces a controller's disk",
    "tests/kafka/test_real_roll_beyond.py": "rolls its nodes, restarts one in a soak, stops one outside the roll",
    "tests/kafka/test_real_security.py": "SASL and ACLs (the StandardAuthorizer's ZooKeeper twin)",
    "tests/kafka/test_real_zk_bounces.py": "kills brokers and lets their sessions expire",
    "tests/kafka/test_real_zk_history.py": "a ZooKeeper whose transaction log is the history it ingests",
    "tests/kafka/test_real_zk_min_isr_configs.py": "a static min.insync.replicas in server.properties",
    "tests/kafka/test_real_zk_partitions.py": "dynamic min ISR defaults, stopped brokers, a throttled reassignment",
    "tests/kafka/test_real_zk_shutdown.py": "controlled shutdowns and a killed controller",
}
