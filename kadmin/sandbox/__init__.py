"""A local ZooKeeper-mode playground: real ZooKeeper servers and emulated brokers (also the tests' fixture)."""
