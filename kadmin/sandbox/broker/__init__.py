"""The emulated ZooKeeper-mode Kafka broker of the sandbox and the tests.

`codec` (the Kafka wire format, independent of kafka-python and kio), `controller` (Kafka 3.9's
ZooKeeper-mode ControlledShutdown on the real znodes) and `server` (connections, ApiVersions,
Metadata; `EmulatedBroker` and its blocking twin `ThreadedBroker`).
"""
