#!/usr/bin/env bash
# Lay out a real Apache Kafka's runtime classpath, like a distribution's libs/, from Maven Central:
#   scripts/fetch-kafka.sh VERSION      (3.9.1, 4.3.1, or the aliases 3.9 and 4)
# prints the Kafka home, ${KADMIN_KAFKA_CACHE:-~/.cache/kadmin/kafka}/VERSION, whose libs/*.jar then run
# as `java -cp 'HOME/libs/*' MAIN ARGS` (what bin/kafka-run-class.sh does). No tarball or Docker is
# needed: a packaging-pom project under tests/kafka/ pins the artifacts and Maven copies its runtime
# dependencies. Idempotent: a stamp records the pom it was made from; a second run fetches nothing.
# Maven's local repository (~/.m2) is its cache; MAVEN_OPTS=-Dmaven.repo.local=DIR moves it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage() { echo "usage: $0 VERSION   (3.9.1, 4.3.1, 3.9, 4)" >&2; exit 2; }
[ $# -eq 1 ] || usage

case "$1" in
    3.9) version=3.9.1 ;;
    4|4.x) version=4.3.1 ;;
    3.9.*|4.*) version="$1" ;;
    *) echo "fetch-kafka: unsupported Kafka version '$1'" >&2; usage ;;
esac
case "$version" in
    3.9.*) pom="$here/tests/kafka/pom-3.9.xml" ;;
    *) pom="$here/tests/kafka/pom-4.x.xml" ;;
esac

cache="${KADMIN_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kadmin/kafka}"
home="$cache/$version"
stamp="$home/.fetched"
# The stamp names the version and the pom's content: editing the pom refetches.
want="$version $(sha256sum "$pom" | cut -d' ' -f1)"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "$home"
    exit 0
fi

for tool in mvn java flock; do
    command -v "$tool" >/dev/null 2>&1 || { echo "fetch-kafka: '$tool' is not on PATH" >&2; exit 3; }
done

mkdir -p "$cache"
# One fetch at a time per version (two test sessions may start together).
exec 9>"$cache/.$version.lock"
flock 9
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "$home"
    exit 0
fi

# Assemble in a scratch directory and swap it in, so an interrupted fetch never leaves a half libs/.
tmp="$(mktemp -d "$cache/.$version.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "fetch-kafka: fetching Apache Kafka $version (org.apache.kafka:kafka_2.13 and kafka-tools, with their runtime" \
    "dependencies) from Maven Central into $home" >&2
start=$(date +%s)
extra=()
pinned="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")"
[ "$version" = "$pinned" ] || extra=("-Dkafka.version=$version")
# Run from the scratch directory: Maven writes nothing next to the pom (no target/).
# Maven's console still writes bare colour resets (ESC[0m) with -q: they are dropped, its messages kept.
(cd "$tmp" && mvn -q -B -Dstyle.color=never -f "$pom" "${extra[@]}" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$tmp/libs" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >&2; exit "${PIPESTATUS[0]}")
n=$(find "$tmp/libs" -name '*.jar' | wc -l)
[ "$n" -gt 0 ] || { echo "fetch-kafka: Maven copied no jars" >&2; exit 1; }
ls "$tmp/libs"/kafka_2.13-"$version".jar >/dev/null

rm -rf "$home"
mkdir -p "$home"
mv "$tmp/libs" "$home/libs"
echo "$want" > "$stamp"
echo "fetch-kafka: $n jars in $(( $(date +%s) - start ))s" >&2
echo "$home"
