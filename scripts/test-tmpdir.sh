#!/usr/bin/env bash
# Prints a fresh directory on a tmpfs (/dev/shm) for one test run's temporary files, or nothing when none is
# usable (then the run keeps the usual TMPDIR). The real-Kafka tests' ZooKeeper and KRaft controllers fsync
# their logs on every write; on a shared, busy disk those stalls vary from run to run, in memory they cost
# nothing. A run writes a few hundred MB there (`make test` removes the directory when the run passes).
# KADMIN_TEST_TMPFS=0 turns it off; KADMIN_TEST_SHM names another tmpfs.
set -u
[ "${KADMIN_TEST_TMPFS:-1}" = 0 ] && exit 0
shm=${KADMIN_TEST_SHM:-/dev/shm}
[ -d "$shm" ] && [ -w "$shm" ] || exit 0
[ "$(stat -f -c %T "$shm" 2>/dev/null)" = tmpfs ] || exit 0
# runs that were interrupted (a day old): not left to fill the memory
find "$shm" -maxdepth 1 -name 'kadmin-tests.*' -user "$(id -u)" -mmin +1440 -exec rm -rf {} + 2>/dev/null
avail_kb=$(df -Pk "$shm" 2>/dev/null | awk 'NR == 2 { print $4 }')
[ -n "$avail_kb" ] && [ "$avail_kb" -ge $((6 * 1024 * 1024)) ] || exit 0
d=$(mktemp -d "$shm/kadmin-tests.XXXXXX" 2>/dev/null) || exit 0
# the tests write hook scripts and run them from there: a noexec mount will not do
printf '#!/bin/sh\nexit 0\n' > "$d/probe" && chmod +x "$d/probe" && "$d/probe" 2>/dev/null || { rm -rf "$d"; exit 0; }
rm -f "$d/probe"
# as /tmp is: the tests run some commands as an unprivileged user, whose files are under it
chmod 1777 "$d" || { rm -rf "$d"; exit 0; }
echo "$d"
