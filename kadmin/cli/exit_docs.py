"""Which exit codes each command can return, and when: the source of docs/exit-codes.md.

A declared mapping, checked by tests/cli/test_docs.py: every command of the CLI has a row here and
every row names a command that exists. The general meaning of each code is `kadmin.exit_codes`; a
row adds what the code means for that command. Codes every command can return (usage errors,
Ctrl-C, and any code no row names, such as an internal error) are listed once, not per command.
"""

from __future__ import annotations

from kadmin.exit_codes import ExitCode as X

Codes = dict[X, str]

# Every command that talks to a cluster: no cluster given or a wrong chroot, unreachable or auth failed.
_CONNECT: Codes = {X.CONFIG: "", X.UNREACHABLE: ""}
# ...and reads data that can be malformed (named on stderr).
_READ: Codes = {**_CONNECT, X.PARTIAL: "some data could not be read or parsed"}
_ZK_ONLY = ("also for a KRaft cluster, or for `--bootstrap-server` alone naming a ZooKeeper-mode cluster's brokers: "
            "this command needs ZooKeeper mode (`--zookeeper`)")
_SANDBOX: Codes = {X.CONFIG: "no sandbox, or it could not start or stop a process"}
# A file named on the command line must be a regular file of at most 64 MiB (kadmin.inputs).
_INPUT = ", is not a regular file (a directory, FIFO, socket or device) or is over 64 MiB"

# The check verbs (`kadmin.exit_codes.CHECK_COMMANDS`) follow the monitoring-plugin convention
# (`kadmin.exit_codes.Verdict`) instead of the general table; this says what WARNING and CRITICAL mean for each.
CHECKS: dict[str, str] = {
    "partitions check": "WARNING (1): some partitions under-replicated; CRITICAL (2): some offline or under "
                        "min ISR, or a partition's state could not be read, or (KRaft) a partition a broker's log "
                        "dirs list is not visible to the principal; UNKNOWN (3) also when (KRaft) a broker's log "
                        "dirs could not be listed, so not every partition could be seen, or when only a "
                        "partition's min ISR could not be read and it is short of a replica (with every replica "
                        "in sync it is OK)",
    "quorum check": "WARNING (1): a member down, a lagging voter or observer, a ZooKeeper member on an older "
                    "zxid epoch; CRITICAL (2): no leader, no majority of voters up, a zombie leader (KIP-595), "
                    "or `--restart NODE` would leave no caught-up majority",
    "migration status": "WARNING (1): brokers with migration enabled but no KRaft controller (a rollback not "
                        "finished), or PRE_MIGRATION longer than `--stuck-after` with brokers lacking migration "
                        "settings; CRITICAL (2): a ZooKeeper-mode broker without migration settings during "
                        "MIGRATION, a KRaft broker in a ZooKeeper-mode cluster, ZooKeeper-mode brokers after the "
                        "migration, or every broker migrating and the metadata still not copied after "
                        "`--stuck-after`; UNKNOWN (3) also when the state or a node's mode could not be read "
                        "(`unread` names what would let kadmin read it)",
}

COMMANDS: dict[str, Codes] = {
    "brokers can-stop": {X.OK: "the broker can stop", X.CONDITION_NOT_MET: "it cannot (blocking partitions listed), "
                         "or no such broker", **_READ},
    "brokers diff": {X.OK: "", X.CONDITION_NOT_MET: "with `--exit-code`: something changed",
                     X.USAGE: f"the saved listing cannot be read{_INPUT}", **_READ,
                     X.CONFIG: "also a live diff of a KRaft cluster (use `--metadata-dir`), or of a ZooKeeper-mode "
                               "cluster through `--bootstrap-server` alone (use `--zookeeper`)"},
    "brokers drain": {X.OK: "the broker leads nothing", X.CONDITION_NOT_MET: "it still leads partitions (named), "
                      "or another reassignment changed its partitions during the drain",
                      **_READ, X.UNSAFE: "a reassignment is in flight (`--force` overrides), its partitions "
                      "changed since they were read, or another kadmin kept the leadership lease until `--timeout` "
                      "(nothing was sent)",
                      X.UNSUPPORTED: "the brokers do not serve the reassignment API (Kafka before 2.4)"},
    "brokers list": {X.OK: "", **_READ},
    "brokers max-epoch": {X.OK: "", X.CONDITION_NOT_MET: "no live broker", **_READ, X.CONFIG: _ZK_ONLY},
    "brokers show": {X.OK: "", X.CONDITION_NOT_MET: "the broker is not registered", **_READ, X.CONFIG: _ZK_ONLY},
    "brokers shutdown": {X.OK: "the controller moved every leadership",
                         X.CONDITION_NOT_MET: "partitions still led by the broker (named)", **_READ,
                         X.REJECTED: "stale broker epoch, or another controller error",
                         X.UNSAFE: "`can-stop` fails (`--force` overrides)",
                         X.UNSUPPORTED: "the active controller is a KRaft controller (migration)",
                         X.CONFIG: _ZK_ONLY},
    "brokers undrain": {X.OK: "", X.CONDITION_NOT_MET: "preferred leaders not all elected",
                        X.USAGE: "the drain file cannot be read, or is another broker's (`--force` overrides)",
                        **_READ, X.CONFIG: "the drain file was saved on another cluster (`--force` overrides)",
                        X.UNSAFE: "a reassignment is in flight (`--force` overrides), its partitions changed since "
                        "they were read, a later drain is stacked on it, or another kadmin kept the leadership lease "
                        "until `--timeout` (nothing was sent)",
                        X.UNSUPPORTED: "the brokers do not serve the reassignment API (Kafka before 2.4)"},
    "brokers unregister": {X.OK: "", X.CONDITION_NOT_MET: "the broker is not registered", **_CONNECT,
                           X.CONFIG: "also a ZooKeeper-mode cluster (UnregisterBroker is KRaft's)",
                           X.REJECTED: "the controller refused",
                           X.UNSAFE: "the broker is active (`--force` overrides)"},
    "brokers wait": {X.OK: "the condition holds", X.CONDITION_NOT_MET: "timed out", **_READ,
                     X.CONFIG: "also `--epoch-gt` on a KRaft cluster or through `--bootstrap-server` alone, and "
                               "`--fenced`/`--gone` on Kafka 3.x KRaft (DescribeCluster below v2)"},
    "brokers watch": {X.OK: "the `--timeout` passed",
                      X.CONDITION_NOT_MET: "`--count N`: fewer than N events before `--timeout`", **_CONNECT},
    "cluster check-id": {X.OK: "every file belongs to this cluster",
                         X.CONDITION_NOT_MET: "a file belongs to another cluster",
                         X.USAGE: f"a file cannot be read{_INPUT}", **_CONNECT},
    "cluster id": {X.OK: "", X.CONDITION_NOT_MET: "the cluster has no id (no /cluster/id)", **_READ},
    "completion": {X.OK: ""},
    "help": {X.OK: ""},
    "features describe": {X.OK: "", **_CONNECT, X.PARTIAL: "a registered node could not be asked which levels it "
                          "supports (named; with `--bootstrap-controller` alone, every broker: give "
                          "`--bootstrap-server` too)",
                          X.CONFIG: "also for a ZooKeeper-mode cluster (`--zookeeper`, or its brokers)",
                          X.UNSUPPORTED: "the node answered ApiVersions below v3 (no feature flags)"},
    "features upgrade": {X.OK: "upgraded, validated (`--dry-run`), or every feature already at its level",
                         X.USAGE: "a release version kadmin does not know", **_CONNECT,
                         X.CONFIG: "also for a ZooKeeper-mode cluster (`--zookeeper`, or its brokers)",
                         X.REJECTED: "the controller rejected UpdateFeatures (Kafka's error named)",
                         X.UNSAFE: "refused, nothing sent: a level below the finalized one (a downgrade), a "
                         "registered node that does not support a new level, or one that could not be asked; there "
                         "is no `--force`",
                         X.UNSUPPORTED: "the node answered ApiVersions below v3 (no feature flags)"},
    "history ingest": {X.OK: "", X.CONDITION_NOT_MET: "nothing to ingest (no log, snapshot or NDJSON found)",
                       X.USAGE: "`--out` is not a writable directory",
                       X.PARTIAL: "a file is truncated or corrupt, or unreadable (named)",
                       X.UNSAFE: "another ingest holds the table's lock (`--wait-lock` waits)"},
    "history report": {X.OK: "", X.USAGE: "not a kadmin history table"},
    "ids claim": {X.OK: "", X.CONDITION_NOT_MET: "a human must decide (several missing ids, a conflict)",
                  **_READ, X.CONFIG: _ZK_ONLY},
    "ids gc": {X.OK: "", **_READ, X.CONFIG: _ZK_ONLY},
    "ids hosts": {X.OK: "", **_READ, X.CONFIG: _ZK_ONLY},
    "ids map": {X.OK: "", **_READ, X.CONFIG: _ZK_ONLY,
                X.UNSAFE: "the id is registered from, or mapped to, another host (`--force` overrides)"},
    "ids missing": {X.OK: "", **_READ, X.CONFIG: _ZK_ONLY},
    "ids resolve": {X.OK: "", X.CONDITION_NOT_MET: "a human must decide (several missing ids, a conflict)",
                    **_READ, X.CONFIG: _ZK_ONLY},
    "ids unmap": {X.OK: "", X.CONDITION_NOT_MET: "no such mapping, or it changed meanwhile", **_CONNECT,
                  X.CONFIG: _ZK_ONLY},
    "partitions list": {X.OK: "", X.CONDITION_NOT_MET: "`--broker` names a broker neither registered nor assigned",
                        **_READ},
    "quorum describe": {X.OK: "", X.CONDITION_NOT_MET: "`--human-readable` found a timestamp ahead of the clock",
                        **_CONNECT, X.CONFIG: "also `--bootstrap-server` naming a ZooKeeper-mode cluster's brokers "
                        "(no KRaft quorum: `--zookeeper` describes its ensemble)",
                        X.UNREACHABLE: "unreachable, or the quorum has no leader",
                        X.REJECTED: "NOT_LEADER_OR_FOLLOWER"},
    "roll plan": {X.OK: "", **_READ, X.USAGE: "`--nodes` names a node the cluster does not have",
                  X.UNSUPPORTED: "the brokers do not serve the reassignment API (Kafka before 2.4)"},
    "roll run": {X.OK: "every node restarted (or skipped by `--only-if`), or the roll in DIR had finished",
                 X.CONDITION_NOT_MET: "a gate was not met, a node did not come back within `--step-timeout`, the "
                 "cluster refused a step (a drain, a ControlledShutdown), kadmin cannot tell whether a node went "
                 "down (`cannot_tell`: `roll confirm`), a node restarted or went away during `--soak` (`crash_loop`), "
                 "or one came back under another identity (`identity_changed`); named, run the same command again "
                 "to continue",
                 X.USAGE: "`--nodes` names an unknown node, the hooks are not given, or a hook names an unknown "
                 "placeholder",
                 X.CONFIG: "DIR holds a roll of another cluster, or one asked with other `--nodes`, `--controllers`, "
                 "`--parallel` or `--batch-rule`; a journal that is not kadmin's, or that cannot be written (a full "
                 "disk: the journal is left whole); a placeholder whose value is unknown; a connection that cannot "
                 "serve a roll",
                 X.UNREACHABLE: "the cluster could not be reached (before the first node, or within `--step-timeout` "
                 "during the roll)",
                 X.UNSAFE: "refused before the first node (the cluster is not healthy; nothing touched, nothing "
                 "journaled), or another live `roll run` holds DIR",
                 X.HOOK_FAILED: "a `--stop`, `--start`, `--restart`, `--only-if`, `--before-node` or `--after-node` "
                 "command failed or did not return within `--step-timeout` (named; the nodes of its batch already "
                 "stopped are brought back first; a failed `--before-node` leaves its node untouched)",
                 X.WINDOW_CLOSED: "`--until` passed with nodes left: none started after it, none left down or "
                 "drained; the same command without `--until` (or with a new window) continues"},
    "roll pause": {X.OK: "DIR/pause written (or there already)", X.USAGE: "no roll in DIR, or it has finished"},
    "roll continue": {X.OK: "DIR/pause removed (or not there)", X.USAGE: "no roll in DIR, or it has finished"},
    "migration roll": {X.OK: "every node of the phase back in its mode and the cluster at the phase's end state, or "
                       "nothing left to restart",
                       X.CONDITION_NOT_MET: "as `roll run`'s, or every node back but the phase's end state "
                       "(MIGRATION, POST_MIGRATION) not reached within `--step-timeout` (run the same command again)",
                       X.USAGE: "a phase that is not one, an address missing (-z, --bootstrap-controller and -b are "
                       "all needed), the hooks not given, or DIR holding an unfinished roll of another phase",
                       X.CONFIG: "as `roll run`'s",
                       X.UNREACHABLE: "the migration's state could not be read (what could not, and what would let "
                       "kadmin read it, named; nothing touched), or as `roll run`'s",
                       X.UNSAFE: "the phase asked in the wrong state (nothing touched: the state found and the phase "
                       "that fits are named), a broker's mode that could not be read, or the cluster not healthy "
                       "before the first node",
                       X.HOOK_FAILED: "as `roll run`'s"},
    "roll confirm": {X.OK: "recorded", X.USAGE: "no roll in DIR, a node not of the roll, nothing to confirm, or "
                     "what the journal contradicts (a node kadmin saw stopped)",
                     X.CONFIG: "the journal is not kadmin's",
                     X.UNSAFE: "a live `roll run` holds DIR"},
    "roll status": {X.OK: "", X.USAGE: "no roll in DIR", X.CONFIG: "the journal is not kadmin's"},
    "sandbox bounce": {X.OK: "", X.CONDITION_NOT_MET: "the sandbox has no such broker", **_SANDBOX},
    "sandbox down": {X.OK: "also when there is no sandbox (nothing to stop)", X.CONFIG: "it could not stop a process"},
    "sandbox kill": {X.OK: "", X.CONDITION_NOT_MET: "the sandbox has no such broker", **_SANDBOX},
    "sandbox phase": {X.OK: "", X.USAGE: "no such phase for that node's role",
                      X.CONDITION_NOT_MET: "the sandbox has no such node",
                      X.CONFIG: "no sandbox, or not a migration sandbox"},
    "sandbox start": {X.OK: "", X.CONDITION_NOT_MET: "no such broker, or it is running already", **_SANDBOX},
    "sandbox status": {X.OK: "everything is up", X.CONDITION_NOT_MET: "something is down (named)", **_SANDBOX},
    "sandbox up": {X.OK: "", **_SANDBOX},
}

# Every command can also return these (and any code no row above names).
EVERY_COMMAND: tuple[X, ...] = (X.USAGE, X.INTERRUPTED, X.OUTPUT_LOST)
