#!/usr/bin/env bash
# Fuzz the core's decoders with cargo-fuzz (libFuzzer), each target for a while:
#   scripts/fuzz.sh [SECONDS]     default 60 per target
# Targets (fuzz/fuzz_targets/): `frame` (the length-prefixed frame reader) and `client_msg`
# (decoding a client message, and re-encoding what decodes). The seed corpus is the golden
# protocol fixtures. Needs a nightly toolchain (`rustup toolchain install nightly`);
# cargo-fuzz is installed into target/fuzz-tools on first use. A crash leaves its input in
# fuzz/artifacts/<target>/ and fails the script.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-60}
cargo_fuzz_version=0.13.1

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    echo "scripts/fuzz.sh: fuzzing needs a nightly toolchain: rustup toolchain install nightly" >&2
    exit 2
fi
tools="$PWD/target/fuzz-tools"
if [ "$("$tools/bin/cargo-fuzz" --version 2>/dev/null || true)" != "cargo-fuzz $cargo_fuzz_version" ]; then
    cargo install cargo-fuzz --version "$cargo_fuzz_version" --locked --root "$tools" --quiet
fi
export PATH="$tools/bin:$PATH"

# Seeds: every client fixture as a body (client_msg) and as a framed stream (frame).
corpus="$PWD/target/fuzz-corpus"
mkdir -p "$corpus/client_msg" "$corpus/frame"
for f in tests/fixtures/protocol/client/*.json tests/fixtures/protocol/server/*.json; do
    name=$(basename "$(dirname "$f")")-$(basename "$f" .json)
    cp "$f" "$corpus/client_msg/$name"
    python3 -c 'import struct,sys; b=open(sys.argv[1],"rb").read(); sys.stdout.buffer.write(struct.pack(">I",len(b))+b+struct.pack(">I",len(b)+9)+b[:5])' \
        "$f" > "$corpus/frame/$name"
done

cd fuzz
for target in frame client_msg; do
    echo "==> fuzzing $target for ${seconds}s"
    log="$corpus/$target.log"
    if ! cargo +nightly fuzz run "$target" "$corpus/$target" -- \
        -max_total_time="$seconds" -max_len=70000 -print_final_stats=1 >"$log" 2>&1; then
        tail -40 "$log"
        echo "scripts/fuzz.sh: $target failed; the input is in fuzz/artifacts/$target/" >&2
        exit 1
    fi
    grep -E '^(stat::number_of_executed_runs|stat::peak_rss_mb|Done [0-9]+ runs)' "$log" || tail -3 "$log"
done
