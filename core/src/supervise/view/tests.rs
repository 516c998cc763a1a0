//! Unit tests of the view builder over session files recorded from a real Pi
//! (`tests/fixtures/sessions/`, see its README): incremental offsets, partial lines,
//! compactions, pending tool calls across views, reasoning cuts, replaced, shrunk and
//! missing files, the bound on the text, and git changes in a temporary repository.

use super::activity::{args_summary, capitalize, cut, excerpt, one_line};
use super::*;
use serde_json::Value;

/// Recorded from a real Pi (see tests/fixtures/sessions/README.md).
fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../tests/fixtures/sessions/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The fixture's lines, each with its `\n`.
fn lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes
        .split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// The line of `bytes` that contains `needle`.
fn line_with(bytes: &[u8], needle: &str) -> Vec<u8> {
    lines(bytes)
        .into_iter()
        .find(|l| String::from_utf8_lossy(l).contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle}"))
}

struct Session {
    dir: tempfile::TempDir,
    file: String,
}

impl Session {
    fn new() -> Session {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("session.jsonl").display().to_string();
        Session { dir, file }
    }

    fn write(&self, bytes: &[u8]) {
        std::fs::write(&self.file, bytes).unwrap();
    }

    fn append(&self, bytes: &[u8]) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.file)
            .unwrap();
        f.write_all(bytes).unwrap();
    }

    fn view(&self, cursor: &Cursor) -> BuiltView {
        self.view_at(cursor, Some(&self.file), 0)
    }

    fn view_at(&self, cursor: &Cursor, file: Option<&str>, now: u64) -> BuiltView {
        let cwd = self.dir.path().display().to_string();
        build(&ViewInput {
            cursor,
            worker: facts(&cwd, file),
            goal: Some("Keep the build green."),
            look: 2,
            reason: ViewReason::Stopped,
            now,
        })
    }
}

fn facts<'a>(cwd: &'a str, file: Option<&'a str>) -> WorkerFacts<'a> {
    WorkerFacts {
        name: "worker",
        status: &SessionStatus::Idle,
        model: Some("fake/fake-model"),
        context_percent: Some(12.4),
        context_tokens: Some(12_400),
        context_window: Some(100_000),
        cwd,
        repo: None,
        branch: None,
        session_file: file,
    }
}

/// Entries of a fixture: every line but the session header.
fn entry_count(bytes: &[u8]) -> u32 {
    lines(bytes).len() as u32 - 1
}

#[test]
fn a_whole_session_shows_every_kind_of_entry() {
    let full = fixture("worker.jsonl");
    let s = Session::new();
    s.write(&full);
    let v = s.view(&Cursor::default());
    let t = &v.text;
    println!("{t}");
    assert_eq!(v.entries, entry_count(&full));
    assert!(!v.unchanged);
    assert_eq!(v.pending_tool_calls, 0);
    assert_eq!(v.cursor.offset, full.len() as u64);
    assert_eq!(v.cursor.session_file.as_deref(), Some(s.file.as_str()));
    for needle in [
        "- Session named \"worker\".",
        "- Model set to fake/fake-model.",
        "- User: Check the build please.",
        "- Tool bash: echo note > notes.txt",
        "-> ok: hello",
        "- Assistant: The build is green.",
        "- Tool bash: cat missing-file -> ERROR: cat: missing-file: No such file or directory ⏎ Command exited with code 1",
        "- ERROR: the model call failed: Provider finish_reason: content_filter",
        "- The worker compacted its context (from ",
        "SUMMARY-7: keep the build green.",
        "- Steer from cli: STEER-9 look at the tests",
        "- Tool bash: sleep 2; echo SLOW-DONE -> ok: SLOW-DONE",
        "- Assistant: The slow step finished.",
    ] {
        assert!(t.contains(needle), "missing {needle:?} in:\n{t}");
    }
    // Reasoning: only the last two of three blocks.
    assert!(
        t.contains("(only the last 2 of 3 reasoning blocks are shown)"),
        "{t}"
    );
    assert!(!t.contains("First thought"), "{t}");
    assert!(t.contains("- Reasoning: Second thought"), "{t}");
    assert!(t.contains("- Reasoning: Third thought"), "{t}");
    // Items in file order.
    let at = |n: &str| t.find(n).unwrap();
    assert!(
        at("Check the build") < at("Now the broken part") && at("STEER-9") < at("Run the slow")
    );
    // Header and footer.
    assert!(
        t.starts_with("# Look 2 (stopped): worker \"worker\"\n"),
        "{t}"
    );
    assert!(t.contains("Goal: Keep the build green."));
    assert!(t.contains("context 12% (12400 of 100000 tokens)"), "{t}");
    assert!(t.contains(&format!("New session entries: {}", v.entries)));
    assert!(t.ends_with(&format!(
        "(end of look 2: {} entries, no tool call waiting)\n",
        v.entries
    )));
    assert!(!t.contains("## Changes"), "not a repository: {t}");
}

#[test]
fn long_reasoning_is_cut_with_a_marker() {
    let full = fixture("worker.jsonl");
    let s = Session::new();
    // Up to and including the first assistant message (the long reasoning and a call).
    let first: Vec<u8> = lines(&full)[..7].concat();
    s.write(&first);
    let v = s.view(&Cursor::default());
    let line = v
        .text
        .lines()
        .find(|l| l.starts_with("- Reasoning: First thought"))
        .unwrap_or_else(|| panic!("{}", v.text));
    let (kept, marker) = line.split_once('…').unwrap();
    assert_eq!(
        kept.trim_start_matches("- Reasoning: ").chars().count(),
        MAX_REASONING_CHARS
    );
    assert!(marker.ends_with(" more chars)"), "{line}");
    assert!(!v.text.contains("END-OF-FIRST-THOUGHT"));
    assert!(!v.text.contains("reasoning blocks are shown"));
}

#[test]
fn two_views_over_a_growing_file_cover_each_entry_once() {
    let full = fixture("worker.jsonl");
    let all = lines(&full);
    for split in 1..all.len() {
        let s = Session::new();
        s.write(&all[..split].concat());
        let first = s.view(&Cursor::default());
        assert_eq!(first.cursor.offset, all[..split].concat().len() as u64);
        s.append(&all[split..].concat());
        let second = s.view(&first.cursor);
        assert_eq!(
            first.entries + second.entries,
            entry_count(&full),
            "split at line {split}"
        );
        assert_eq!(second.cursor.offset, full.len() as u64);
        for prompt in [
            "Check the build please.",
            "Now the broken part.",
            "STEER-9",
            "Run the slow step.",
            "The worker compacted its context",
        ] {
            let n = first.text.matches(prompt).count() + second.text.matches(prompt).count();
            assert_eq!(
                n, 1,
                "{prompt:?} at split {split}:\n{}\n---\n{}",
                first.text, second.text
            );
        }
        assert_eq!(
            second.pending_tool_calls, 0,
            "split {split}: {}",
            second.text
        );
        let third = s.view(&second.cursor);
        assert!(third.unchanged && third.entries == 0, "{}", third.text);
        assert!(third.text.contains("Nothing new since the previous view."));
    }
}

#[test]
fn a_partial_last_line_is_left_for_the_next_view() {
    let full = fixture("worker.jsonl");
    let all = lines(&full);
    let last = all.last().unwrap();
    let complete = all[..all.len() - 1].concat();
    let s = Session::new();
    s.write(&complete);
    s.append(&last[..last.len() / 2]);
    let v = s.view(&Cursor::default());
    assert_eq!(v.cursor.offset, complete.len() as u64);
    assert_eq!(v.entries, entry_count(&full) - 1);
    assert!(
        v.text.contains("An entry still being written"),
        "{}",
        v.text
    );
    assert!(!v.text.contains("The slow step finished."));
    assert!(!v.text.contains("malformed"));

    s.append(&last[last.len() / 2..]);
    let next = s.view(&v.cursor);
    assert_eq!(next.entries, 1);
    assert!(
        next.text.contains("- Assistant: The slow step finished."),
        "{}",
        next.text
    );
    assert!(!next.text.contains("still being written"));
}

#[test]
fn a_call_without_result_is_carried_until_its_result_arrives() {
    let full = fixture("worker.jsonl");
    let mid = fixture("worker-mid-tool.jsonl");
    assert!(
        full.starts_with(&mid),
        "the cut fixture is a prefix of the session"
    );
    let s = Session::new();
    s.write(&mid);
    let v = s.view(&Cursor::default());
    assert_eq!(v.pending_tool_calls, 1, "{}", v.text);
    let call = &v.cursor.pending[0];
    assert_eq!(
        (call.name.as_str(), call.summary.as_str()),
        ("bash", "sleep 2; echo SLOW-DONE")
    );
    assert!(
        v.text
            .contains("- Tool bash: sleep 2; echo SLOW-DONE -> no result yet"),
        "{}",
        v.text
    );
    assert!(
        v.text.contains(
            "## Tool calls still without a result (1)\n- bash: sleep 2; echo SLOW-DONE ("
        )
    );
    assert!(v.text.contains("1 tool call without a result)"));

    // The store keeps the cursor as JSON.
    let stored = serde_json::to_string(&v.cursor).unwrap();
    let cursor: Cursor = serde_json::from_str(&stored).unwrap();
    assert_eq!(cursor, v.cursor);

    // A view with nothing new still lists the call.
    let again = s.view(&cursor);
    assert!(again.unchanged && again.pending_tool_calls == 1);
    assert!(
        again
            .text
            .contains("## Tool calls still without a result (1)")
    );

    s.write(&full);
    let done = s.view(&again.cursor);
    assert_eq!(done.pending_tool_calls, 0, "{}", done.text);
    assert!(done.cursor.pending.is_empty());
    assert!(
        done.text.contains(&format!(
            "- Result of the earlier tool call bash ({}): ok: SLOW-DONE",
            call.id
        )),
        "{}",
        done.text
    );
    assert!(!done.text.contains("still without a result"));
}

#[test]
fn a_call_the_run_moved_past_is_dropped_and_said() {
    let full = fixture("worker.jsonl");
    let mid = fixture("worker-mid-tool.jsonl");
    let s = Session::new();
    s.write(&mid);
    let v = s.view(&Cursor::default());
    assert_eq!(v.pending_tool_calls, 1);
    // The next thing recorded is a user message: that call will get no result.
    s.append(&line_with(&full, "Now the broken part."));
    let next = s.view(&v.cursor);
    assert_eq!(next.pending_tool_calls, 0, "{}", next.text);
    assert!(
        next.text
            .contains("- The earlier tool call bash sleep 2; echo SLOW-DONE (")
            && next
                .text
                .contains("got no result before a new user message."),
        "{}",
        next.text
    );
    // Within one view, the call's own line says so.
    let s2 = Session::new();
    s2.write(&mid);
    s2.append(&line_with(&full, "Now the broken part."));
    let one = s2.view(&Cursor::default());
    assert!(
        one.text
            .contains("echo SLOW-DONE -> no result was recorded"),
        "{}",
        one.text
    );
    assert_eq!(one.pending_tool_calls, 0);
}

#[test]
fn a_shrunk_or_replaced_file_is_read_again_from_its_start() {
    let full = fixture("worker.jsonl");
    let mid = fixture("worker-mid-tool.jsonl");
    let s = Session::new();
    s.write(&full);
    let v = s.view(&Cursor::default());

    // Shrunk: shorter than the offset.
    s.write(&mid);
    let shrunk = s.view(&v.cursor);
    assert!(
        shrunk
            .text
            .contains("The session file shrank since the previous view"),
        "{}",
        shrunk.text
    );
    assert_eq!(shrunk.entries, entry_count(&mid));
    assert!(!shrunk.unchanged);
    assert_eq!(shrunk.cursor.offset, mid.len() as u64);
    assert_eq!(shrunk.pending_tool_calls, 1);

    // Replaced by a longer file whose byte before the offset is not a line end.
    let replaced = [
        b"{\"type\": \"session\"".as_slice(),
        &full[b"{\"type\":\"session\"".len()..],
    ]
    .concat();
    s.write(&replaced);
    let again = s.view(&shrunk.cursor);
    assert!(
        again
            .text
            .contains("The session file was replaced since the previous view"),
        "{}",
        again.text
    );
    assert_eq!(again.entries, entry_count(&full));
    assert_eq!(
        again.pending_tool_calls, 0,
        "the old pending call is not carried: {}",
        again.text
    );

    // Another file altogether.
    let mut cursor = again.cursor.clone();
    cursor.session_file = Some("/elsewhere/old.jsonl".into());
    let switched = s.view(&cursor);
    assert!(
        switched
            .text
            .contains("session file changed (was /elsewhere/old.jsonl)"),
        "{}",
        switched.text
    );
    assert_eq!(switched.entries, entry_count(&replaced));
}

#[test]
fn a_missing_file_or_none_is_said_not_fatal() {
    let s = Session::new();
    let v = s.view(&Cursor::default());
    assert!(v.text.contains("does not exist yet"), "{}", v.text);
    assert_eq!((v.entries, v.unchanged), (0, true));
    assert!(v.text.contains("Nothing new since the previous view."));

    s.write(&fixture("worker-mid-tool.jsonl"));
    let read = s.view(&v.cursor);
    assert!(read.entries > 0 && read.pending_tool_calls == 1);
    std::fs::remove_file(&s.file).unwrap();
    let gone = s.view(&read.cursor);
    assert!(gone.text.contains("is gone"), "{}", gone.text);
    assert_eq!((gone.cursor.offset, gone.pending_tool_calls), (0, 0));
    assert!(!gone.unchanged);

    let none = s.view_at(&read.cursor, None, 0);
    assert!(none.text.contains("has no session file"), "{}", none.text);
    assert_eq!(none.cursor.offset, read.cursor.offset, "the cursor is kept");
    assert_eq!(none.cursor.pending, read.cursor.pending);

    // A directory named as the session file: refused, and the reason is in the text.
    let cwd = s.dir.path().display().to_string();
    let odd = build(&ViewInput {
        cursor: &read.cursor,
        worker: facts(&cwd, Some(&cwd)),
        goal: None,
        look: 1,
        reason: ViewReason::Look,
        now: 0,
    });
    assert!(odd.text.contains("Goal: none set"), "{}", odd.text);
    assert!(
        odd.text.contains("it is a directory, not a regular file"),
        "{}",
        odd.text
    );
    assert!(
        odd.text
            .contains(&format!("session file changed (was {})", s.file)),
        "{}",
        odd.text
    );
    // A FIFO nobody writes to (an open that blocked would hang here) and a device that
    // never ends are not read either.
    let fifo = s.dir.path().join("fifo.jsonl");
    crate::files::make_fifo(&fifo);
    let fifo = fifo.display().to_string();
    for (file, what) in [
        (fifo.as_str(), "a FIFO"),
        ("/dev/zero", "a character device"),
    ] {
        let odd = build(&ViewInput {
            cursor: &Cursor::default(),
            worker: facts(&cwd, Some(file)),
            goal: None,
            look: 1,
            reason: ViewReason::Look,
            now: 0,
        });
        assert!(odd.text.contains(what), "{}", odd.text);
    }
}

#[test]
fn malformed_lines_are_skipped_and_counted() {
    let full = fixture("worker.jsonl");
    let s = Session::new();
    s.write(&full);
    s.append(b"not json\n[1,2]\n\n\r\n{\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":\"odd\"}}\n");
    let v = s.view(&Cursor::default());
    assert!(
        v.text
            .contains("- 2 malformed session-file line(s) skipped."),
        "{}",
        v.text
    );
    // The odd but valid object still counts as an entry.
    assert_eq!(v.entries, entry_count(&full) + 1);
}

#[test]
fn the_text_is_bounded_by_dropping_the_oldest_items() {
    let full = fixture("worker.jsonl");
    let template: Value =
        serde_json::from_slice(&line_with(&full, "Check the build please.")).unwrap();
    let s = Session::new();
    s.write(&lines(&full)[0]);
    for i in 0..60 {
        let mut entry = template.clone();
        entry["message"]["content"][0]["text"] =
            Value::String(format!("PROMPT-{i:02} {}", "é".repeat(3000)));
        s.append(format!("{entry}\n").as_bytes());
    }
    let v = s.view(&Cursor::default());
    assert!(v.text.len() <= MAX_VIEW_BYTES, "{} bytes", v.text.len());
    assert_eq!(v.entries, 60);
    assert!(v.text.contains("PROMPT-59"));
    assert!(!v.text.contains("PROMPT-00"));
    let omitted = (0..60)
        .filter(|i| !v.text.contains(&format!("PROMPT-{i:02}")))
        .count();
    assert!(
        v.text.contains(&format!(
            "(…{omitted} earlier items omitted to keep this view under 24 KiB)"
        )),
        "{}",
        v.text
    );
    assert!(
        v.text
            .contains(&format!("…({} more chars)", 3000 + 10 - MAX_TEXT_CHARS))
    );
    assert!(
        v.text
            .ends_with("(end of look 2: 60 entries, no tool call waiting)\n")
    );
}

#[test]
fn the_header_says_how_long_since_the_last_turn() {
    let full = fixture("worker.jsonl");
    let last_turn = lines(&full)
        .iter()
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .filter(|e| e["message"]["role"] == "assistant")
        .filter_map(|e| e["message"]["timestamp"].as_u64())
        .max()
        .unwrap();
    let s = Session::new();
    s.write(&full);
    let v = s.view_at(
        &Cursor::default(),
        Some(&s.file.clone()),
        last_turn + 4 * 60_000 + 5_000,
    );
    assert_eq!(v.cursor.last_turn_at, Some(last_turn));
    assert!(v.text.contains("· last turn 4m ago\n"), "{}", v.text);
    // Kept when nothing new comes.
    let later = s.view_at(&v.cursor, Some(&s.file.clone()), last_turn + 3 * 3_600_000);
    assert_eq!(later.cursor.last_turn_at, Some(last_turn));
    assert!(
        later.text.contains("· last turn 3h ago\n"),
        "{}",
        later.text
    );
    let fresh = Session::new();
    assert!(
        fresh
            .view(&Cursor::default())
            .text
            .contains("no turn seen yet")
    );
}

#[test]
fn git_changes_join_the_view() {
    let s = Session::new();
    let repo = git2::Repository::init(s.dir.path()).unwrap();
    let sig = git2::Signature::now("t", "t@example.invalid").unwrap();
    let commit = |message: &str, file: &str| {
        std::fs::write(s.dir.path().join(file), message).unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new(file)).unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .unwrap()
    };
    commit("first", "a.txt");
    s.write(&fixture("worker.jsonl"));
    let v = s.view(&Cursor::default());
    assert!(v.text.contains("## Changes (git, "), "{}", v.text);
    assert!(v.text.contains("?? session.jsonl"), "{}", v.text);

    let second = commit("second change", "a.txt");
    std::fs::write(s.dir.path().join("u.txt"), "u").unwrap();
    let next = s.view(&v.cursor);
    assert_eq!(next.entries, 0);
    assert!(!next.unchanged, "HEAD moved");
    assert_eq!(next.cursor.head, Some(second.to_string()));
    assert!(
        next.text
            .contains(&format!("{} second change", &second.to_string()[..7])),
        "{}",
        next.text
    );
    assert!(
        next.text.contains("M  a.txt") && next.text.contains("?? u.txt"),
        "{}",
        next.text
    );

    let still = s.view(&next.cursor);
    assert!(still.unchanged, "same HEAD, no entries: {}", still.text);
    assert!(still.text.contains("HEAD unchanged at"));
}

#[test]
fn cuts_are_marked_and_safe_on_any_text() {
    assert_eq!(cut("short", 10), "short");
    assert_eq!(
        cut(&"é".repeat(12), 10),
        format!("{}…(2 more chars)", "é".repeat(10))
    );
    assert_eq!(one_line("a\n\n  b  \nc", 100), "a ⏎ b ⏎ c");
    let long = format!("{}{}", "h".repeat(400), "t".repeat(400));
    let e = excerpt(&long, 300);
    assert!(
        e.starts_with(&"h".repeat(150)) && e.ends_with(&"t".repeat(150)),
        "{e}"
    );
    assert!(e.contains("…(500 chars omitted)…"));
    assert_eq!(excerpt("", 300), "(no output)");
    assert_eq!(
        args_summary(&serde_json::json!({"path": "src/a.rs", "offset": 3})),
        "src/a.rs (+1 more args)"
    );
    assert_eq!(
        args_summary(&serde_json::json!({"pattern": "fn main", "path": "src"})),
        "fn main in src"
    );
    assert_eq!(args_summary(&serde_json::json!({"x": 1})), "{\"x\":1}");
    assert_eq!(capitalize("steer"), "Steer");
}
