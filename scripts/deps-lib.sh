# Shared by scripts/test-deps.sh and scripts/synapse-deps.sh (sourced, not run): argument
# parsing, messages, paths and the logged install step. The caller sets `script` (the
# message prefix) first and `step_hint` (what to check when a step fails) before its steps.
#
# Sets mode (human | env), root, deps_dir, log_dir; defines say, die and step.

mode=human
case "${1:-}" in
  "") ;;
  --env) mode=env ;;
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "$script: unknown argument: $1 (try --help)" >&2; exit 2 ;;
esac

say() { echo "$script: $*" >&2; }
die() { echo "$script: ERROR: $*" >&2; exit 1; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
# Beside cargo's build output (CARGO_TARGET_DIR when set, as cargo does), so worktrees that
# share a target directory share one set of test dependencies too.
deps_dir="${CARGO_TARGET_DIR:-$root/target}/test-deps"
log_dir="$deps_dir/logs"
step_hint=""

# Run one install step, its output in a log; on failure show why and stop.
step() {
  local name="$1"; shift
  local log="$log_dir/$name.log"
  say "$name ..."
  if ! "$@" >"$log" 2>&1; then
    echo "$script: ERROR: step '$name' failed: $*" >&2
    echo "---- last lines of $log ----" >&2
    tail -n 40 "$log" >&2 || true
    echo "----" >&2
    if grep -q -e ENOSPC -e 'no space left' "$log"; then
      echo "$script: the disk is full: $(df -h "$deps_dir" | tail -n 1)" >&2
    elif [[ -n "$step_hint" ]]; then
      echo "$script: $step_hint" >&2
    fi
    exit 1
  fi
}
