# Sourced by the demo scripts (demo.sh, demo-kraft.sh, demo-migration.sh): `step` and `field` below, and a
# sandbox directory of the demo's own, unless KADMIN_SANDBOX_DIR names one, with its sandbox stopped and the directory it made removed at exit, whatever happens.
#   demo_sandbox NAME      (NAME: the prefix of the temporary directory)
demo_sandbox() {
    made=""
    if [ -z "${KADMIN_SANDBOX_DIR:-}" ]; then
        KADMIN_SANDBOX_DIR="$(mktemp -d -t "$1.XXXXXX")"
        made=$KADMIN_SANDBOX_DIR
    fi
    export KADMIN_SANDBOX_DIR
    trap 'kadmin sandbox down >/dev/null 2>&1 || true; if [ -n "$made" ]; then rm -rf "$made"; fi' EXIT
}

# The command a demo runs next, in bold on stderr.
step() { printf '\n\033[1m$ %s\033[0m\n' "$*" >&2; }

# One field of a `kadmin ... -o json` result on stdin: field NAME
field() { python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][sys.argv[1]])' "$1"; }
