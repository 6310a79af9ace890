"""Create the demo's topics on a real cluster and return once every partition has a leader and its full ISR.

    python3 scripts/demo-topics.py BOOTSTRAP_SERVERS

orders (6 partitions x 3 replicas, min.insync.replicas=2), payments (3x3), audit-log (4x2), through Kafka's
admin API (the venv's kafka-python). Used by scripts/demo.sh (ZooKeeper mode) and scripts/demo-kraft.sh.
"""

import sys
import time

from kafka.admin import KafkaAdminClient, NewTopic

DEADLINE = 300  # a fact to wait for (leaders and full ISRs), generous for a busy two-core machine

admin = KafkaAdminClient(bootstrap_servers=sys.argv[1].split(","), client_id="kadmin-demo")
topics = [NewTopic("orders", 6, 3, topic_configs={"min.insync.replicas": "2"}),
          NewTopic("payments", 3, 3), NewTopic("audit-log", 4, 2)]
admin.create_topics(topics)
want = sum(t.num_partitions for t in topics)
deadline = time.monotonic() + DEADLINE
while True:
    meta = admin.describe_topics([t.name for t in topics])
    parts = [p for t in meta if not t["error_code"] for p in t["partitions"]]
    if len(parts) == want and all(p["leader_id"] >= 0 and sorted(p["isr_nodes"]) == sorted(p["replica_nodes"])
                                  for p in parts):
        break
    if time.monotonic() > deadline:
        sys.exit(f"demo: the topics' partitions did not all get a leader and a full ISR within {DEADLINE} s")
    time.sleep(0.2)
admin.close()
