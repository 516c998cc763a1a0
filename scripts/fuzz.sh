#!/usr/bin/env bash
# Fuzz the core's decoders and the bridges' chat layer with cargo-fuzz (libFuzzer), each
# target for a while:
#   scripts/fuzz.sh [SECONDS]     default 60 per target, two targets at a time
#   scripts/fuzz.sh build         only build the targets (scripts/test.sh starts this early)
# Targets (fuzz/fuzz_targets/): `frame` (the length-prefixed frame reader), `client_msg`
# (decoding a client message, and re-encoding what decodes), `chat_command` (chat text read
# as a `/cmd` or `!cmd` command and as a reply to an ask card) and `chat_split` (Markdown
# rendered to the phones' HTML and split for Telegram's and Matrix's limits, and raw HTML
# split). Seeds: the golden protocol fixtures for the first two, command lines for
# `chat_command`, README.md and docs/*.md for `chat_split`. The bridges are built without
# their phone platforms (fuzz/Cargo.toml). Needs a nightly toolchain (`rustup toolchain
# install nightly`); cargo-fuzz is installed into target/fuzz-tools on first use. A crash
# leaves its input in fuzz/artifacts/<target>/ and fails the script.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-60}
case $seconds in
    build) ;;
    *[!0-9]* | "") echo "scripts/fuzz.sh: SECONDS is a whole number (or \`build\`), not \"$seconds\"" >&2; exit 2 ;;
esac
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

# Seeds: command lines as typed on either phone (chat_command); the project's Markdown,
# and HTML in the bridges' dialect (chat_split; the first byte picks a small limit).
mkdir -p "$corpus/chat_command" "$corpus/chat_split"
i=0
while IFS= read -r line; do
    i=$((i + 1))
    printf '%b' "$line" > "$corpus/chat_command/seed-$i"
done <<'SEEDS'
/sessions
/status@shep_bot \u201cmy session\u201d
!status 3f2a
/asks@other_bot
/answer #7 2
!answer 12 ship it\nnow
/steer fix-login run the tests\nthen commit
!steer \u201e" x\u201c go on
!steer "\x01\xff\xff\xff\xff!\xff\xc2\xbb\xff\x00\x001\xe2\x83\xa3\x00.\xe2\x80\x9d\xe2\x80\x9c\t
/supervise "my s" docs/plan.md
!supervise stop fix-login
/goal ship it
/look \u00abfix-login\u00bb
/stop fix-login then rebase
!stop then run the tests first
/unpair
/workers
!projects
/close #5
/frobnicate now
/home/ada/src
2\ufe0f\u20e3
#3
SEEDS
# One seed per section (at `## ` and `### ` headings): small inputs keep the runs fast.
for f in README.md docs/*.md; do
    awk -v out="$corpus/chat_split/$(basename "$f" .md)" '/^##+ /{n++} {print > (out "-" n+0)}' "$f"
done
printf '%s' '(<b>bold one
<i>and italic</i> two</b> <a href="https://x.test/?q=a&amp;b">link</a> &lt;&#128512;
<pre><code class="language-sh">echo 1
echo 2
</code></pre><blockquote>quoted</blockquote>' > "$corpus/chat_split/html"

cd fuzz
# Its own target dir, always: a shared one would hold the main build's lock while
# scripts/test.sh builds both at once.
export CARGO_TARGET_DIR="$PWD/target"
# All targets in one build first (each run then starts at once), timed for the CI log.
# The release profile is opt-level 1 (fuzz/Cargo.toml): a third less to compile than
# opt-level 3, for 70-85% as many runs a second.
built=$SECONDS
cargo +nightly fuzz build
echo "==> fuzz targets built in $((SECONDS - built)) s"
[ "$seconds" = build ] && exit 0

# One target, its log in the corpus folder; fails with the log's tail.
fuzz_one() {
    local target=$1 log="$corpus/$1.log" options
    # Frames up to a large body; chat text up to two Telegram messages (longer inputs are
    # cut: a run renders and splits its input for up to four limits, checking each chunk).
    # The chat targets have dictionaries (fuzz/dict/): entities, tags, command words, quotes.
    case $target in
        frame | client_msg) options=(-max_len=70000) ;;
        *) options=(-max_len=8192 "-dict=$PWD/dict/$target.dict") ;;
    esac
    if ! cargo +nightly fuzz run "$target" "$corpus/$target" -- \
        -max_total_time="$seconds" "${options[@]}" -print_final_stats=1 >"$log" 2>&1; then
        tail -40 "$log"
        echo "scripts/fuzz.sh: $target failed; the input is in fuzz/artifacts/$target/" >&2
        return 1
    fi
    echo "==> $target: $(grep -E '^Done [0-9]+ runs' "$log" || tail -1 "$log")"
}

# libFuzzer runs on one core: two targets at a time, each pair waited for together.
failed=0
for pair in "frame client_msg" "chat_command chat_split"; do
    echo "==> fuzzing $pair for ${seconds}s each, side by side"
    pids=()
    for target in $pair; do
        fuzz_one "$target" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do
        wait "$pid" || failed=1
    done
    [ "$failed" = 0 ] || exit 1
done
