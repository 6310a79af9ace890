#!/usr/bin/env bash
# Install what kadmin's sandbox and tests need from Debian when it is missing: a JRE and ZooKeeper.
set -euo pipefail
need=()
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v openssl >/dev/null 2>&1 || need+=(openssl)  # the TLS tests make their own certificates
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
if [ ${#need[@]} -eq 0 ]; then
    exit 0
fi
echo "installing ${need[*]} with apt-get" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "${need[@]}" >/dev/null
