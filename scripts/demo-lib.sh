# Sourced by scripts/demo.sh and scripts/demo-kraft.sh: a sandbox directory of the demo's own, unless
# KADMIN_SANDBOX_DIR names one, with its sandbox stopped and the directory it made removed at exit, whatever happens.
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
