"""The JVM options of every Spark JVM the suite starts (tests/conftest.py puts them in the environment).

C1 only: a test's job of a few thousand rows ends before C2's compiles pay, and a session starts on a third less
CPU (11 against 15 CPU-s, measured on the suite's busy cores). The same Spark and the same results; kadmin's own
default (C2) is for GiBs of logs. Spark's launcher passes SPARK_SUBMIT_OPTS to the driver JVM (in local mode, the
executors too) and SPARK_LAUNCHER_OPTS to its own short JVM.
"""

ENV = {"SPARK_SUBMIT_OPTS": "-XX:TieredStopAtLevel=1",
       "SPARK_LAUNCHER_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
