#!/usr/bin/env bash
# The TypeScript checks for pi-ext/: install the pinned toolchain (scripts/test-deps.sh), type
# check strictly (tsc --noEmit), then run the node:test unit tests on the pinned Node 22.
# Exits non-zero on the first failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"

env_lines="$("$root/scripts/test-deps.sh" --env)"
eval "$env_lines"
export PATH="$SHEPHERD_NODE_BIN_DIR:$PATH"

cd "$root/pi-ext"
echo "== pi-ext: typecheck (tsc $(node node_modules/typescript/bin/tsc --version | sed 's/^Version //'), Node $(node --version))"
npm run --silent typecheck
echo "== pi-ext: unit tests"
npm test --silent
