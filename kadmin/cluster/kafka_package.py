"""kafka-python's package without its eager `__init__`: only the modules a command uses are imported.

`import kafka.protocol.admin.topics` (or any kafka-python module) first executes `kafka/__init__.py`, which
imports the whole client: KafkaAdminClient, KafkaConsumer, KafkaProducer and everything they use (~90 of the
~150 modules, ~75 ms of CPU on the development machine). kadmin uses none of them: it drives kafka-python's
connection manager (kafka.net) and its protocol classes (kafka.protocol) directly (kadmin/cluster/kraft.py).

`install()` registers the `kafka` package as its import system would (the same spec, path, loader and
logging set-up: the NullHandler on the "kafka" logger), but without running its `__init__`: each
`kafka.<submodule>` still imports as usual, and a name the package itself defines (`kafka.KafkaAdminClient`,
`from kafka import KafkaProducer`, `kafka.__version__`) runs the real `__init__` on first use, so nothing that
asks for it sees a difference. Nothing is done when kafka-python is already imported (a test, a script).
kafka-python internal: the names its `__init__` defines (PACKAGE_NAMES); tested with kafka-python 3.0.12.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import threading
from types import ModuleType
from typing import Any

# What kafka/__init__.py defines itself (kafka-python 3.0.12): a request for one of them runs it
PACKAGE_NAMES = frozenset({
    "__version__", "__author__", "__license__", "__copyright__", "__all__",
    "KafkaAdminClient", "KafkaConsumer", "KafkaProducer", "AsyncConsumerRebalanceListener",
    "ConsumerRebalanceListener", "DefaultSerializer", "JsonSerializer", "Serializer", "Deserializer",
    "ConsumerGroupMetadata", "OffsetAndMetadata", "TopicPartition", "TopicPartitionReplica", "IsolationLevel",
    "OffsetSpec",
})


def install() -> bool:
    """Register kafka-python's package without executing its `__init__` (see the module's docstring); True when
    installed now, False when kafka-python is already imported or not found."""
    if "kafka" in sys.modules:
        return False
    spec = importlib.util.find_spec("kafka")
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return False
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def __getattr__(name: str) -> Any:  # noqa: N807 - the module-level __getattr__ of PEP 562
        if name not in PACKAGE_NAMES:
            raise AttributeError(f"module 'kafka' has no attribute {name!r}")
        del module.__dict__["__getattr__"]  # once: the real __init__ defines every name from now on
        loader.exec_module(module)
        return getattr(module, name)

    module.__dict__["__getattr__"] = __getattr__
    module.__dict__["__title__"] = "kafka"
    logging.getLogger("kafka").addHandler(logging.NullHandler())
    sys.modules["kafka"] = module
    return True


def full(module: ModuleType) -> bool:
    """Has the package's own `__init__` run (a test's question)?"""
    return "__getattr__" not in module.__dict__


_decoder_codegen = threading.RLock()


def serialize_decoder_codegen() -> None:
    """kafka-python compiles a response type's decoder on its first use (`StructField.compiled_decode_from`) and,
    while it does, points the struct's shared `_data_class` at the class to build, then back at a weakref proxy of
    it. Two threads compiling the same decoder at once (the first answers of one type from several brokers, each
    decoded on its connection's own I/O thread) can build it around the proxy: every later answer of that type
    then fails to decode (`object.__new__(X): X is not a type object`) and its request waits out its time. The
    suite saw it against Kafka 3.9.1 (DescribeLogDirs, then DescribeTopicPartitions: 10 s each, no answer).
    Here the compiles are made one at a time (a lock held for the cache look-up too: it costs nothing next to a
    decode). Idempotent. kafka-python internal (3.0.12), made from KraftClient's constructor."""
    from kafka.protocol.schemas.fields.struct import StructField

    original = StructField.compiled_decode_from
    if getattr(original, "kadmin_serialized", False):
        return

    def compiled_decode_from(self: Any, *args: Any, **kwargs: Any) -> Any:
        with _decoder_codegen:
            return original(self, *args, **kwargs)

    compiled_decode_from.kadmin_serialized = True  # type: ignore[attr-defined]
    StructField.compiled_decode_from = compiled_decode_from  # type: ignore[method-assign]
