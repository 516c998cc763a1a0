#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it (.ci/run calls this):
#   1. formatting (cargo fmt --check), and no import cycles between modules;
#   2. lints (clippy -D warnings, every target; the docs, rustdoc -D warnings; and the
#      binary built with one phone bridge, or none), while the test dependencies install
#      in the background: Node 22, the pinned Pi and Synapse into target/test-deps
#      (cached), and tmux (apt-get, as root, when missing);
#   3. the extension's TypeScript type check and node --test unit tests;
#   4. every Rust test: unit (among them the check that pi-ext/wire/generated/ is what the
#      Rust protocol types generate), golden protocol fixtures, the real daemon over its socket,
#      and end to end with a real Pi against the scripted fake model (and a real Synapse);
#   5. with a nightly toolchain, 30 s of fuzzing per target: the protocol decoders, the chat
#      command parser, Markdown rendering and splitting (scripts/fuzz.sh; its build starts
#      in the background after step 1 and is waited for before the tests run; the fuzzers
#      run beside the tests at nice 19, on the CPU the tests leave idle).
# Fails on the first failing step. Nothing is skipped: a missing dependency is an error.
# Each step's start is logged, and the run ends with how long each step took.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Each step says when it started (minutes:seconds into the run), and the run ends with how
# long each step took: where a slow CI run spends its time.
started=$SECONDS
timings=()
last=""
mark() {
    local now=$((SECONDS - started))
    [ -n "$last" ] && timings+=("$(printf '%4d s  %s' $((now - last_at)) "$last")")
    last="$1"
    last_at=$now
}
step() {
    mark "$*"
    printf '\n==> [%d:%02d] %s\n' $((last_at / 60)) $((last_at % 60)) "$*"
}
summary() {
    mark ""
    printf '\n==> where the time went (%d s in all)\n' $((SECONDS - started))
    printf '%s\n' "${timings[@]}"
}

# Cargo prints one line per crate it builds (hundreds, with matrix-sdk): keep the log to
# warnings, errors and test results so a failure is easy to find.
export CARGO_TERM_QUIET=true

# A test never passes by skipping: the local-iteration switch that makes the Synapse
# tests return early is refused here, so the suite (and CI) always runs them.
if [ -n "${SHEPHERD_SKIP_E2E:-}" ]; then
    echo "scripts/test.sh: SHEPHERD_SKIP_E2E is set; the whole suite never skips the Synapse tests. Unset it (it is for single cargo test runs while iterating)." >&2
    exit 2
fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "no import cycles between modules (scripts/module-cycles.py)"
python3 scripts/module-cycles.py

# Fuzzing needs nightly (libFuzzer's instrumentation); where there is none it is said, not
# hidden, and the suite does not depend on it. The fuzz targets' build (its own target dir)
# starts now, in the background: it overlaps the downloads of the test dependencies, and
# is waited for before the tests run. Its log: target/fuzz-build.log.
nightly=""
toolchains="$(rustup toolchain list 2>/dev/null || true)"
grep -q '^nightly' <<<"$toolchains" && nightly=yes
background=()
# On an early failure or an interrupt, stop what runs in the background (each its whole
# process group: setsid made it the leader).
stop_background() {
    local pid
    for pid in "${background[@]}"; do
        { kill -- -"$pid" || kill "$pid"; } 2>/dev/null || true
    done
    background=()
}
trap stop_background EXIT
trap 'stop_background; exit 130' INT TERM
# Wait for background job $1 (its log $2), saying $3 and showing the log's end if it failed.
wait_background() {
    local ok=yes pid rest=()
    wait "$1" || ok=""
    for pid in "${background[@]}"; do
        [ "$pid" = "$1" ] || rest+=("$pid")
    done
    background=("${rest[@]}")
    if [ -z "$ok" ]; then
        tail -40 "$2"
        echo "scripts/test.sh: $3 failed (whole log: $2)" >&2
        exit 1
    fi
}
mkdir -p target
if [ -n "$nightly" ]; then
    setsid scripts/fuzz.sh build >target/fuzz-build.log 2>&1 &
    fuzz_build=$!
    background+=("$fuzz_build")
fi

# The test dependencies (downloads, mostly) install in the background too, beside the
# lints, and are waited for before the first step that needs them.
setsid scripts/test-deps.sh --env >target/test-deps.env 2>target/test-deps.log &
test_deps=$!
background+=("$test_deps")

step "cargo clippy --all-targets -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

# The developers' docs: every intra-doc link resolves and no doc text reads as HTML
# (private items included; the lints clippy left checked reused the dependencies).
step "cargo doc --document-private-items -D warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --document-private-items --locked

# The phone bridges are cargo features: the builds with one of them, or neither, compile
# and lint clean too (README: "Building without a phone bridge").
step "cargo clippy without a phone bridge (telegram only, matrix only, neither)"
for features in telegram matrix ""; do
    cargo clippy -p shepherd -p shepherd-bridges --locked --no-default-features --features "$features" -- -D warnings
done

step "test dependencies (Node 22, pinned Pi, Synapse; installed in the background)"
wait_background "$test_deps" target/test-deps.log "installing the test dependencies"
cat target/test-deps.log
eval "$(cat target/test-deps.env)"
export SHEPHERD_NODE SHEPHERD_NODE_BIN_DIR SHEPHERD_PI SHEPHERD_PI_VERSION SHEPHERD_PI_EXT SHEPHERD_SYNAPSE_PYTHON SHEPHERD_SSHD

step "pi-ext: type check and unit tests"
scripts/test-ts.sh

step "cargo test: build (unit, protocol fixtures, real daemon, real Pi end to end)"
cargo test --workspace --locked --no-run

if [ -n "$nightly" ]; then
    step "the fuzz targets' build (started in the background)"
    wait_background "$fuzz_build" target/fuzz-build.log "building the fuzz targets"
    grep '^==> fuzz targets built' target/fuzz-build.log || true
    # The fuzzers run beside the tests at the lowest CPU priority: they take only what the
    # tests leave idle (end-to-end tests mostly wait on Pi and Synapse), never their share.
    setsid nice -n 19 scripts/fuzz.sh 30 >target/fuzz-run.log 2>&1 &
    fuzz_run=$!
    background+=("$fuzz_run")
fi

step "cargo test: run (with the fuzzers beside it at nice 19, where there is nightly)"
cargo test --workspace --locked

step "fuzz the decoders, the chat parser and the splitter (scripts/fuzz.sh 30)"
if [ -n "$nightly" ]; then
    wait_background "$fuzz_run" target/fuzz-run.log "fuzzing"
    grep '^==> ' target/fuzz-run.log || true
else
    echo "no nightly toolchain here: fuzzing not run (rustup toolchain install nightly, then scripts/fuzz.sh)"
fi

summary
