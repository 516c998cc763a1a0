//! # Managed workers on the phone
//!
//! What the bridges say about managed workers (the Pi sessions the core launched for an
//! owner), the same on both phones and pure (the clock passed in): `/workers`
//! (`!workers`) as each owner's tree, one message per owner and one line per worker
//! (label, definition, state, age, tokens and cost, `—` when the core could not count
//! them yet) so that a reply to a worker's line steers it; a worker's ending, said once
//! in its owner's place (`🧩 scout-1 (scout) finished`, with the start of its task: the
//! result itself is mail for the owner alone); and whom a worker's question is for, on
//! its card (`→ owner fix-login · worker scout-1`). A linked host's worker is named
//! `gpu#7` ([`WorkerRef`]): its ids are that core's.

use std::collections::{HashMap, HashSet};

use shepherd_core::protocol::{Millis, UsageTotals, Worker, WorkerId, WorkerState};

use super::format::{duration, one_line, plural, thousands, truncate};
use super::html::Html;
use super::html::Rendered;

/// Longest owner name or label shown.
const NAME: usize = 48;
/// How much of a worker's task its ending shows.
pub const TASK_SHOWN: usize = 300;
/// Above this many workers the lines are folded into the header (one message).
pub const WORKER_LINES_MAX: usize = 30;

/// A message of `/workers` after its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkersLine {
    /// An owner's heading: `👤 fix-login · 2 workers`.
    Owner(Rendered),
    /// One worker's line; a reply to it steers that worker.
    Worker(WorkerRef, Rendered),
}

/// A managed worker across the herd: its id on its core, and the linked host that core
/// is (`None`: this core's). Written `#7`, or `gpu#7` on a linked host.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkerRef {
    pub host: Option<String>,
    pub id: WorkerId,
}

impl WorkerRef {
    pub fn of(w: &Worker) -> WorkerRef {
        WorkerRef {
            host: w.host.clone(),
            id: w.id,
        }
    }

    /// How its core names it in `steer_agent` and `close_agent` (`#7`).
    pub fn agent(&self) -> String {
        format!("#{}", self.id)
    }
}

impl std::fmt::Display for WorkerRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            Some(host) => write!(f, "{host}#{}", self.id),
            None => write!(f, "#{}", self.id),
        }
    }
}

/// `/workers`: a header, then each owner's tree (its heading, then its workers depth
/// first, a worker's own workers indented). `usage`: each worker's own totals where the
/// core counted them (a worker missing from it shows `—`). `prefix`: `/` or `!`; `close`
/// says how a worker is closed on this phone.
pub fn workers_list(
    workers: &[Worker],
    usage: &HashMap<WorkerRef, UsageTotals>,
    now: Millis,
    prefix: char,
    close: &str,
) -> (Rendered, Vec<WorkersLine>) {
    let mut h = Html::new();
    if workers.is_empty() {
        h.text("🧩 No live workers: a Pi session starts one with its delegate_agent tool.");
        return (h.into(), Vec::new());
    }
    let lines = tree(workers, usage, now);
    let owners = lines
        .iter()
        .filter(|l| matches!(l, WorkersLine::Owner(_)))
        .count() as u64;
    h.text("🧩 ").bold("Workers").text(&format!(
        ": {} under {}",
        plural(workers.len() as u64, "live worker", "live workers"),
        plural(owners, "owner", "owners")
    ));
    if workers.len() > WORKER_LINES_MAX {
        for line in &lines {
            let (WorkersLine::Owner(r) | WorkersLine::Worker(_, r)) = line;
            h.line().raw(&r.html, &r.plain);
        }
        h.line().italic(&format!(
            "{prefix}close <worker> closes one; `shepherd workers` steers none (too many for a line each)"
        ));
        return (h.into(), Vec::new());
    }
    h.line()
        .italic(&format!("reply to a worker's line to steer it; {close}"));
    (h.into(), lines)
}

/// Each owner's heading and its workers, depth first.
fn tree(
    workers: &[Worker],
    usage: &HashMap<WorkerRef, UsageTotals>,
    now: Millis,
) -> Vec<WorkersLine> {
    let ids: HashSet<WorkerRef> = workers.iter().map(WorkerRef::of).collect();
    let mut children: HashMap<WorkerRef, Vec<&Worker>> = HashMap::new();
    let mut roots: Vec<&Worker> = Vec::new();
    for w in workers {
        let parent = w.parent_worker.map(|id| WorkerRef {
            host: w.host.clone(),
            id,
        });
        match parent.filter(|p| ids.contains(p) && p.id != w.id) {
            Some(parent) => children.entry(parent).or_default().push(w),
            None => roots.push(w),
        }
    }
    roots.sort_by(|a, b| {
        (&a.host, &a.owner_name, &a.owner_id, a.id).cmp(&(
            &b.host,
            &b.owner_name,
            &b.owner_id,
            b.id,
        ))
    });
    for v in children.values_mut() {
        v.sort_by_key(|w| w.id);
    }
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut i = 0;
    while i < roots.len() {
        let owner = &roots[i].owner_id;
        let group: Vec<&Worker> = roots[i..]
            .iter()
            .take_while(|w| &w.owner_id == owner)
            .copied()
            .collect();
        i += group.len();
        let mut stack: Vec<(usize, &Worker)> = group.iter().rev().map(|w| (0, *w)).collect();
        let mut lines = Vec::new();
        while let Some((depth, w)) = stack.pop() {
            let key = WorkerRef::of(w);
            if !seen.insert(key.clone()) {
                continue;
            }
            let line = worker_line(w, depth, usage.get(&key), now);
            lines.push(WorkersLine::Worker(key.clone(), line));
            if let Some(kids) = children.get(&key) {
                stack.extend(kids.iter().rev().map(|k| (depth + 1, *k)));
            }
        }
        let mut head = Html::new();
        head.text("👤 ");
        if let Some(host) = &group[0].host {
            head.text(&format!("{} · ", truncate(host, NAME)));
        }
        head.bold(&truncate(&one_line(&group[0].owner_name), NAME))
            .text(&format!(
                " · {}",
                plural(lines.len() as u64, "worker", "workers")
            ));
        out.push(WorkersLine::Owner(head.into()));
        out.extend(lines);
    }
    out
}

/// `└ 🧩 scout-1 (scout) · working · 3m 2s · 12,345 tokens · $0.0123 · #7`.
pub fn worker_line(w: &Worker, depth: usize, usage: Option<&UsageTotals>, now: Millis) -> Rendered {
    let mut h = Html::new();
    if depth > 0 {
        h.text(&format!("{}└ ", "   ".repeat(depth - 1)));
    }
    h.text(&format!("{} ", state_icon(w.state)))
        .bold(&truncate(&w.label, NAME))
        .text(&format!(
            " ({}) · {} · {} · {}",
            truncate(&one_line(&w.definition), NAME),
            w.state,
            duration(now.saturating_sub(w.created_at)),
            usage.map_or("—".to_string(), spent)
        ));
    if w.pending_ask.is_some() {
        h.text(" · ❓ asks its owner");
    }
    h.text(" · ").code(&WorkerRef::of(w).to_string());
    h.into()
}

/// `12,345 tokens · $0.0123`.
pub fn spent(u: &UsageTotals) -> String {
    format!("{} tokens · ${:.4}", thousands(u.total_tokens), u.cost)
}

fn state_icon(state: WorkerState) -> &'static str {
    match state {
        WorkerState::Starting | WorkerState::Working => "🧩",
        WorkerState::Blocked => "⏸️",
        WorkerState::Settling | WorkerState::Done => "🏁",
        WorkerState::Unknown => "❔",
        WorkerState::Lost => "💥",
        WorkerState::Closed => "✖️",
    }
}

/// How a worker's assignment ended, as far as the phone says it (once per worker).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ending {
    /// `settling` (its result is on its way to the owner) or `done`.
    Finished,
    /// Its process ended before its result.
    Lost,
}

impl Ending {
    /// The ending a state means; `None` while it works (or once closed by someone).
    pub fn of(state: WorkerState) -> Option<Ending> {
        match state {
            WorkerState::Settling | WorkerState::Done => Some(Ending::Finished),
            WorkerState::Lost => Some(Ending::Lost),
            _ => None,
        }
    }
}

/// A worker's ending, said in its owner's place: `🏁 scout-1 (scout) finished` or
/// `💥 scout-1 (scout) lost: …`, then the start of its task. The result's text is mail for
/// the owner alone and is not on the wire.
pub fn ended(w: &Worker, ending: Ending) -> Rendered {
    let mut h = Html::new();
    let what = format!(" ({})", truncate(&one_line(&w.definition), NAME));
    match ending {
        Ending::Finished => {
            h.text("🏁 ")
                .text("🧩 ")
                .bold(&truncate(&w.label, NAME))
                .text(&what)
                .text(" finished: its result went to ")
                .bold(&truncate(&one_line(&w.owner_name), NAME));
        }
        Ending::Lost => {
            h.text("💥 ")
                .text("🧩 ")
                .bold(&truncate(&w.label, NAME))
                .text(&what)
                .text(" lost: its process ended before its result; ")
                .bold(&truncate(&one_line(&w.owner_name), NAME))
                .text(" can continue_agent or close_agent it");
        }
    }
    h.line()
        .italic("task: ")
        .text(&truncate(w.task.trim(), TASK_SHOWN));
    h.into()
}

/// `close` done: `✖️ closed worker scout-1 (#5) of fix-login; its Pi session is kept`.
pub fn closed(w: &Worker) -> Rendered {
    let mut h = Html::new();
    h.text("✖️ closed worker ")
        .bold(&truncate(&w.label, NAME))
        .text(&format!(
            " ({}) of {}; its Pi session is kept",
            WorkerRef::of(w),
            truncate(&one_line(&w.owner_name), NAME)
        ));
    h.into()
}

/// A steer a worker was sent: `➡️ steered worker scout-1 (#5)`.
pub fn steered(w: &Worker) -> Rendered {
    let mut h = Html::new();
    h.text("➡️ steered worker ")
        .bold(&truncate(&w.label, NAME))
        .text(&format!(
            " ({}) of {}",
            WorkerRef::of(w),
            truncate(&one_line(&w.owner_name), NAME)
        ));
    h.into()
}

/// The worker a line is about, when `about` names one (`#5`, or `gpu#5` on a linked
/// host): what a reply to a `/workers` line carries instead of a session id.
pub fn worker_ref(about: &str) -> Option<WorkerRef> {
    let (host, id) = about.split_once('#')?;
    let host = match host {
        "" => None,
        host if shepherd_core::protocol::is_host_name(host) => Some(host.to_string()),
        _ => return None,
    };
    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
        .then(|| id.parse().ok())
        .flatten()
        .map(|id| WorkerRef { host, id })
}

/// Whom a worker's question is for, on its card: `→ owner fix-login · worker scout-1`
/// (`label`: the worker's, when the bridge knows it; else its id).
pub fn ask_to(owner: Option<&str>, worker: WorkerId, label: Option<&str>) -> String {
    let owner = truncate(&one_line(owner.unwrap_or("?")), NAME);
    match label {
        Some(label) => format!("→ owner {owner} · worker {}", truncate(label, NAME)),
        None => format!("→ owner {owner} · worker #{worker}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::protocol::WorkerBackend;

    const NOW: Millis = 10_000_000;

    fn worker(id: u64, label: &str, owner: &str, parent: Option<u64>) -> Worker {
        Worker {
            id: WorkerId::new(id),
            label: label.into(),
            definition: "scout".into(),
            owner_id: format!("{owner}-id").into(),
            owner_name: owner.into(),
            parent_worker: parent.map(WorkerId::new),
            session_id: format!("w{id}").into(),
            session_file: None,
            cwd: "/work/app".into(),
            backend: WorkerBackend::Headless,
            state: WorkerState::Working,
            available_actions: vec![],
            pending_ask: None,
            task: "Find every caller of <login>".into(),
            delegates: false,
            created_at: NOW - 185_000,
            updated_at: NOW,
            host: None,
        }
    }

    fn totals(tokens: u64, cost: f64) -> UsageTotals {
        UsageTotals {
            total_tokens: tokens,
            cost,
            ..Default::default()
        }
    }

    #[test]
    fn the_list_is_each_owners_tree_with_usage_or_a_dash() {
        let mut lead = worker(3, "lead-1", "mara", None);
        lead.delegates = true;
        let child = Worker {
            owner_id: "w3".into(),
            owner_name: "lead-1".into(),
            ..worker(4, "child", "lead-1", Some(3))
        };
        let other = worker(5, "scout-1", "fix-login", None);
        // A linked host's worker with the same id: its own owner, named with its host.
        let far = Worker {
            host: Some("gpu".into()),
            owner_id: "trainer-id".into(),
            owner_name: "trainer".into(),
            ..worker(3, "tune", "trainer", None)
        };
        let here = |id| WorkerRef {
            host: None,
            id: WorkerId::new(id),
        };
        let usage = HashMap::from([
            (here(3), totals(12_345, 0.01234)),
            (here(5), totals(7, 0.0)),
            (WorkerRef::of(&far), totals(9, 0.5)),
        ]);
        let (head, lines) = workers_list(
            &[lead, child, other, far],
            &usage,
            NOW,
            '/',
            "✖ close closes it",
        );
        assert_eq!(
            head.plain,
            "🧩 Workers: 4 live workers under 3 owners\nreply to a worker's line to steer it; ✖ close closes it"
        );
        let plain: Vec<String> = lines
            .iter()
            .map(|l| match l {
                WorkersLine::Owner(r) => format!("owner {}", r.plain),
                WorkersLine::Worker(id, r) => format!("{id} {}", r.plain),
            })
            .collect();
        assert_eq!(
            plain,
            [
                "owner 👤 fix-login · 1 worker",
                "#5 🧩 scout-1 (scout) · working · 3m 5s · 7 tokens · $0.0000 · #5",
                "owner 👤 mara · 2 workers",
                "#3 🧩 lead-1 (scout) · working · 3m 5s · 12,345 tokens · $0.0123 · #3",
                "#4 └ 🧩 child (scout) · working · 3m 5s · — · #4",
                "owner 👤 gpu · trainer · 1 worker",
                "gpu#3 🧩 tune (scout) · working · 3m 5s · 9 tokens · $0.5000 · gpu#3",
            ]
        );
    }

    #[test]
    fn no_workers_says_how_one_starts() {
        let (head, lines) = workers_list(&[], &HashMap::new(), NOW, '!', "");
        assert!(head.plain.contains("No live workers"), "{}", head.plain);
        assert!(lines.is_empty());
    }

    #[test]
    fn many_workers_fold_into_one_message() {
        let many: Vec<Worker> = (1..=31)
            .map(|i| worker(i, &format!("w-{i}"), "mara", None))
            .collect();
        let (head, lines) = workers_list(&many, &HashMap::new(), NOW, '!', "");
        assert!(lines.is_empty());
        assert!(head.plain.contains("w-31 (scout)"), "{}", head.plain);
        assert!(head.plain.contains("!close <worker>"), "{}", head.plain);
    }

    #[test]
    fn an_ending_names_the_worker_and_shows_the_start_of_its_task_escaped() {
        let mut w = worker(5, "scout-1", "fix-login", None);
        let r = ended(&w, Ending::Finished);
        assert_eq!(
            r.plain,
            "🏁 🧩 scout-1 (scout) finished: its result went to fix-login\ntask: Find every caller of <login>"
        );
        assert!(r.html.contains("&lt;login&gt;"), "{}", r.html);
        w.task = "x".repeat(400);
        let lost = ended(&w, Ending::Lost);
        assert!(
            lost.plain.contains("scout-1 (scout) lost: "),
            "{}",
            lost.plain
        );
        assert!(lost.plain.chars().count() < 400 + 120, "{}", lost.plain);
    }

    #[test]
    fn endings_are_finished_or_lost() {
        assert_eq!(Ending::of(WorkerState::Settling), Some(Ending::Finished));
        assert_eq!(Ending::of(WorkerState::Done), Some(Ending::Finished));
        assert_eq!(Ending::of(WorkerState::Lost), Some(Ending::Lost));
        assert_eq!(Ending::of(WorkerState::Blocked), None);
        assert_eq!(Ending::of(WorkerState::Closed), None);
    }

    #[test]
    fn worker_lines_are_about_hash_ids() {
        assert_eq!(
            worker_ref("#12"),
            Some(WorkerRef {
                host: None,
                id: WorkerId::new(12)
            })
        );
        let far = worker_ref("gpu#12").expect("a linked host's worker");
        assert_eq!(
            (far.host.as_deref(), far.agent()),
            (Some("gpu"), "#12".into())
        );
        assert_eq!(far.to_string(), "gpu#12");
        assert_eq!(worker_ref("#"), None);
        assert_eq!(worker_ref("#1a"), None);
        assert_eq!(worker_ref("Bad Host#1"), None);
        assert_eq!(worker_ref("3f2a9c1b-session"), None);
        let w = worker(5, "scout-1", "fix-login", None);
        assert_eq!(
            closed(&w).plain,
            "✖️ closed worker scout-1 (#5) of fix-login; its Pi session is kept"
        );
        assert_eq!(
            steered(&w).plain,
            "➡️ steered worker scout-1 (#5) of fix-login"
        );
    }

    #[test]
    fn a_workers_card_says_owner_and_label() {
        assert_eq!(
            ask_to(Some("fix-login"), WorkerId::new(5), Some("scout-1")),
            "→ owner fix-login · worker scout-1"
        );
        assert_eq!(
            ask_to(Some("fix-login"), WorkerId::new(5), None),
            "→ owner fix-login · worker #5"
        );
    }
}
