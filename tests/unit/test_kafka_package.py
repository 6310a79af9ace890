"""kafka-python's package registered without its eager __init__ (kadmin/cluster/kafka_package.py): a command
imports only the kafka-python modules it uses, and whatever asks for the package's own names still gets them."""

from __future__ import annotations

import subprocess
import sys

# What a KRaft partitions check imports from kafka-python, then the package's own names
SCRIPT = """
import sys
import kadmin.cluster.kraft_cluster, kadmin.cluster.kraft, kadmin.cluster.min_isr, kadmin.cluster.messages
from kafka import errors
from kafka.net.manager import KafkaConnectionManager
from kafka.net.selector import NetworkSelector
from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeLogDirsRequest
from kafka.protocol.admin.configs import DescribeConfigsRequest
from kafka.protocol.admin.topics import DescribeTopicPartitionsRequest
import kafka
from kadmin.cluster import kafka_package
heavy = sorted(m for m in sys.modules if m.split(".")[:2] in (["kafka", "admin"], ["kafka", "consumer"],
                                                                ["kafka", "producer"], ["kafka", "coordinator"]))
print(kafka_package.full(kafka), heavy, errors.KafkaError.__name__)
print(kafka.__version__, kafka.KafkaAdminClient.__name__, kafka_package.full(kafka))
from kafka import KafkaProducer, TopicPartition
print(KafkaProducer.__name__, TopicPartition.__name__, "kafka.producer" in sys.modules)
"""


def run(script: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def test_a_command_imports_no_client_it_does_not_use_and_the_package_names_still_resolve() -> None:
    import kafka.version

    first, names, later = run(SCRIPT)
    assert first == "False [] KafkaError"  # no admin client, consumer, producer or coordinator imported
    assert names == f"{kafka.version.__version__} KafkaAdminClient True"  # the real __init__, run on first use
    assert later == "KafkaProducer TopicPartition True"


def test_nothing_is_done_when_kafka_python_is_already_imported() -> None:
    (line,) = run("import kafka, sys\nfrom kadmin.cluster import kafka_package\n"
                  "print(kafka_package.install(), kafka_package.full(sys.modules['kafka']))")
    assert line == "False True"


def test_an_unknown_name_is_an_attribute_error_not_the_whole_client() -> None:
    (line,) = run("import kadmin.cluster.kafka, kafka, sys\n"
                  "print(hasattr(kafka, 'no_such_name'), 'kafka.admin' in sys.modules)")
    assert line == "False False"


# The first imports of the threads a KRaft read starts at once (a scan's pages from several brokers, the log dirs of
# several brokers), in a fresh interpreter once the command has its KraftClient
THREADS = """
import importlib, threading
from kadmin.cluster.kraft import KraftClient
KraftClient("127.0.0.1:9", {}, 1.0, controllers=False)  # nothing listens there: making it sends nothing
modules = ["kafka.net.manager", "kafka.protocol.admin.cluster", "kafka.protocol.admin.configs",
           "kafka.protocol.admin.topics", "kafka.protocol.metadata.metadata"]
errors = []
start = threading.Barrier(len(modules))
def first_import(name):
    start.wait()
    try:
        importlib.import_module(name)
    except Exception as e:
        errors.append(f"{name}: {type(e).__name__}: {e}")
threads = [threading.Thread(target=first_import, args=(m,)) for m in modules]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(errors or "ok")
"""


def test_the_threads_of_a_scan_import_kafka_python_without_deadlocking() -> None:
    """kafka.protocol.admin's __init__ imports every module of the package: its modules imported first on four
    threads at once deadlocked on their module locks in 20 of 20 fresh interpreters (`partitions check` failed with
    _DeadlockError in 3 of 6 runs once more of its reads ran at once). The KraftClient imports kafka-python's network
    layer, and with it those modules, on the thread that makes it."""
    for _ in range(3):
        assert run(THREADS) == ["ok"]


# Two first decodes of one response type at once, interleaved as the suite saw them: A compiles the decoder; B finds
# none yet and starts its own; A finishes (and puts the struct's class back to its weakref proxy); B then builds its
# decoder. argv[1] "kadmin": with kadmin's lock (KraftClient's constructor installs it)
CODEGEN = """
import sys, threading
if sys.argv[1] == "kadmin":
    from kadmin.cluster.kraft import KraftClient
    KraftClient("127.0.0.1:9", {}, 1.0, controllers=False)
from kafka.protocol.admin.cluster import DescribeLogDirsResponse as Response
from kafka.protocol.schemas.fields.struct import StructField

data = Response(version=4, throttle_time_ms=0, error_code=0, results=[]).encode(version=4)
emit = StructField.emit_decode_from
a_compiling, b_compiling, a_done = threading.Event(), threading.Event(), threading.Event()

def held(self, *args, **kwargs):
    if threading.current_thread().name == "A":
        a_compiling.set()
        b_compiling.wait(2)  # B never gets this far while A compiles, when compiles are one at a time
    elif threading.current_thread().name == "B":
        b_compiling.set()
        a_done.wait(10)
    return emit(self, *args, **kwargs)

StructField.emit_decode_from = held
said = {}

def decode(name):
    try:
        Response.decode(data, version=4)
        said[name] = "ok"
    except Exception as e:
        said[name] = f"{type(e).__name__}: {e}"
    if name == "A":
        a_done.set()

a = threading.Thread(target=decode, args=("A",), name="A")
a.start()
a_compiling.wait(10)
b = threading.Thread(target=decode, args=("B",), name="B")
b.start()
a.join()
b.join()
print(said["A"], said["B"], sep=" | ")
"""


def test_two_threads_decoding_a_response_type_first_at_once_both_decode_it() -> None:
    """kafka-python builds a response type's decoder on first use around a class it swaps in and back: a second
    thread building the same one meanwhile built it around the weakref proxy, and every later answer of that type
    failed to decode (the suite's DescribeLogDirs and DescribeTopicPartitions against 3.9.1 waited out 10 s). With
    kadmin's lock the second thread finds the first one's decoder."""
    without = run(CODEGEN.replace('sys.argv[1] == "kadmin"', "False"))
    assert without[0].startswith("ok | TypeError") and "not a type object" in without[0], without  # the hazard
    assert run(CODEGEN.replace('sys.argv[1] == "kadmin"', "True")) == ["ok | ok"]
