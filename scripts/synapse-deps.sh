#!/usr/bin/env bash
# Installs Synapse (PyPI matrix-synapse, pinned below) into a venv under
# target/test-deps/synapse-<version>/, for the Matrix end-to-end tests. Called by
# scripts/test-deps.sh; can also run on its own.
#
# Idempotent and cached by version: a second run only checks a stamp (well under a second).
# Needs python3 (>= 3.10) with the venv module (on Debian: python3-venv, installed here
# with apt-get when running as root and it is missing), flock, and PyPI. Fails loudly, with
# the reason, when anything cannot be installed.
#
# Usage:
#   scripts/synapse-deps.sh          install if needed, print the paths
#   scripts/synapse-deps.sh --env    install if needed, print only KEY=VALUE lines:
#     SHEPHERD_SYNAPSE_PYTHON   the venv's python (`$it -m synapse.app.homeserver ...`)
#     SHEPHERD_SYNAPSE_VERSION  the pinned Synapse version
#
# Environment: SHEPHERD_PYTHON picks the interpreter used to create the venv.
set -euo pipefail

# The pin. Synapse 1.163.2 ships prebuilt manylinux wheels for CPython 3.10+.
synapse_version=1.163.2

script=synapse-deps
# shellcheck source=scripts/deps-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/deps-lib.sh" "$@"

venv="$deps_dir/synapse-$synapse_version"
venv_python="$venv/bin/python"

mkdir -p "$deps_dir" "$log_dir"
command -v flock >/dev/null 2>&1 || die "'flock' is not on PATH; it is needed to install the test dependencies"
# Our own lock (test-deps.sh holds target/test-deps/.lock while it calls us).
exec 8>"$deps_dir/.synapse.lock"
flock 8

step_hint="is PyPI reachable? ('$venv.tmp/bin/pip download --no-deps matrix-synapse==$synapse_version' checks it)"

if [[ ! -f "$venv/.complete" || ! -x "$venv_python" ]]; then
  # The first interpreter that runs and is new enough (pyenv shims may exist but fail).
  new_enough() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' >/dev/null 2>&1; }
  python="${SHEPHERD_PYTHON:-}"
  if [[ -n "$python" ]]; then
    new_enough "$python" || die "SHEPHERD_PYTHON=$python does not run or is older than 3.10 ($("$python" --version 2>&1 | head -n 1))"
  else
    for candidate in python3 python3.13 python3.12 python3.11 python3.10; do
      if command -v "$candidate" >/dev/null 2>&1 && new_enough "$candidate"; then python="$candidate"; break; fi
    done
    [[ -n "$python" ]] || die "no python3 >= 3.10 on PATH (python3 is: $(python3 --version 2>&1 | head -n 1)); Synapse $synapse_version needs one (on Debian: apt-get install python3 python3-venv)"
  fi

  rm -rf "$venv" "$venv.tmp"
  if ! "$python" -m venv "$venv.tmp" >"$log_dir/synapse-venv.log" 2>&1; then
    rm -rf "$venv.tmp"
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
      ver="$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
      say "the venv module is missing; installing python$ver-venv with apt-get"
      step "apt-python-venv" bash -c "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y python$ver-venv || DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv"
      "$python" -m venv "$venv.tmp" >"$log_dir/synapse-venv.log" 2>&1 \
        || { tail -n 20 "$log_dir/synapse-venv.log" >&2; die "'$python -m venv' still fails after installing the venv package"; }
    else
      tail -n 20 "$log_dir/synapse-venv.log" >&2
      die "'$python -m venv' failed (on Debian: apt-get install python3-venv)"
    fi
  fi
  pip_flags=(--disable-pip-version-check --no-input --quiet --prefer-binary)
  step "synapse-$synapse_version" "$venv.tmp/bin/python" -m pip install "${pip_flags[@]}" \
    "matrix-synapse==$synapse_version"
  got="$("$venv.tmp/bin/python" -c 'import synapse, importlib.metadata as m; print(m.version("matrix-synapse"))' 2>&1)" \
    || die "the installed Synapse does not import: $got"
  [[ "$got" == "$synapse_version" ]] || die "installed matrix-synapse==$synapse_version but it reports '$got'"
  touch "$venv.tmp/.complete"
  # venv scripts name the venv's path in their shebangs: the python binary itself does not,
  # and the harness only runs `<venv>/bin/python -m ...`, so the rename is safe.
  mv "$venv.tmp" "$venv"
  for old in "$deps_dir"/synapse-*; do
    [[ -d "$old" && "$old" != "$venv" && "$old" != *.tmp ]] && rm -rf "$old"
  done
  say "Synapse $synapse_version ready"
fi

flock -u 8

if [[ "$mode" == env ]]; then
  printf '%s=%q\n' SHEPHERD_SYNAPSE_PYTHON "$venv_python"
  printf '%s=%q\n' SHEPHERD_SYNAPSE_VERSION "$synapse_version"
else
  echo "Synapse $synapse_version: $venv_python -m synapse.app.homeserver"
fi
