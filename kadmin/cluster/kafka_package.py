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
