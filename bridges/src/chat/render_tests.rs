//! Tests of [`super`]: the exact text of each message, escaping of everything a session
//! or a person wrote, and the card budget.

use shepherd_core::examples;
use shepherd_core::protocol::{Ask, AskState, BridgeInfo, CoreStatus, Report, ReportKind};

use super::*;
use crate::chat::commands::UsageError;
use crate::chat::format::tests::session;
use crate::chat::split::{TELEGRAM_LIMIT, telegram_len, text_of};

const NOW: u64 = 1_000_000_000 + 3 * 3_600_000;

fn ask(question: &str, options: &[&str]) -> Ask {
    Ask {
        id: 12.into(),
        session_id: session("x").id,
        question: question.into(),
        options: options.iter().map(|o| o.to_string()).collect(),
        created_at: NOW - 180_000,
        ..examples::ask()
    }
}

fn answered(mut a: Ask, answer: &str, by: &str) -> Ask {
    a.state = AskState::Answered;
    a.answer = Some(answer.into());
    a.answered_by = Some(by.into());
    a.answered_at = Some(NOW);
    a
}

/// The HTML's text is the plain twin (for messages without links or quotes).
fn consistent(r: &Rendered) {
    assert_eq!(text_of(&r.html), r.plain, "html and plain differ");
}

#[test]
fn an_ask_card_with_options() {
    let s = session("fix-login");
    let card = ask_card(&ask("Deploy to staging?", &["yes", "no"]), Some(&s));
    assert_eq!(
        card.html,
        "❓ <b>fix-login</b> (app@main)\n<b>Deploy to staging?</b>\n1. yes\n2. no\n\
         <i>ask #12 · choose an option, or reply to this message to answer</i>"
    );
    consistent(&card.rendered());
    assert_eq!(card.options.len(), 2);
    assert_eq!(card.options[1].number, 2);
    assert_eq!(card.options[1].text, "no");
    assert_eq!(card.options[1].label, "2. no");
    assert_eq!(card.options[1].key, Some("2️⃣"));
}

#[test]
fn an_ask_card_without_session_or_options_but_with_details() {
    let mut a = ask("Which <branch> & why?", &[]);
    a.details = Some("tried:\n- a\n- b\n".into());
    a.session_name = "<evil> & 😀".into();
    let card = ask_card(&a, None);
    assert_eq!(
        card.html,
        "❓ <b>&lt;evil&gt; &amp; 😀</b>\n<b>Which &lt;branch&gt; &amp; why?</b>\n\
         <blockquote>tried:\n- a\n- b</blockquote>\n\
         <i>ask #12 · reply to this message to answer</i>"
    );
    assert_eq!(
        card.plain,
        "❓ <evil> & 😀\nWhich <branch> & why?\n> tried:\n> - a\n> - b\n\
         ask #12 · reply to this message to answer"
    );
    assert!(card.options.is_empty());
}

#[test]
fn an_answered_card_shows_who_and_what() {
    let s = session("fix-login");
    let a = answered(ask("Deploy?", &["yes", "no"]), "no", "telegram:@alice");
    let r = answered_card_with(&a, Some(&s));
    assert_eq!(
        r.html,
        "❓ <b>fix-login</b> (app@main)\n<b>Deploy?</b>\n1. yes\n2. <b>no</b>\n\
         ✅ answered by telegram:@alice: <b>no</b>"
    );
    consistent(&r);
    let free = answered(ask("Name?", &[]), "<b>bob</b>", "cli");
    let r = answered_card(&free);
    assert!(
        r.html
            .ends_with("✅ answered by cli: <b>&lt;b&gt;bob&lt;/b&gt;</b>"),
        "{}",
        r.html
    );
}

#[test]
fn an_ask_question_is_markdown_like_a_report() {
    let one = ask_card(&ask("Keep `login()` as *it is*?", &["yes", "no"]), None);
    assert!(
        one.rendered()
            .html
            .contains("<b>Keep <code>login()</code> as <i>it is</i>?</b>"),
        "{}",
        one.rendered().html
    );
    // Bold inside is not nested in the line's bold.
    let strong = ask_card(&ask("Ship **now**?", &[]), None).rendered();
    assert!(
        strong.html.contains("\nShip <b>now</b>?\n"),
        "{}",
        strong.html
    );
    let table = ask("Which?\n\n| a | b |\n|---|---|\n| 1 | 2 |", &[]);
    let r = ask_card(&table, None).rendered();
    assert!(
        r.html.contains("Which?\n\n<pre>a  b\n-  -\n1  2</pre>"),
        "{}",
        r.html
    );
    consistent(&r);
}

#[test]
fn an_integration_card_offers_its_leads_diff() {
    use crate::chat::projects::integration_target;
    let q = "Integrate app@feat/a into main at 3f2a9c1? 2 commits · 1 file changed";
    let card = ask(q, &["approve", "deny"]);
    assert_eq!(integration_target(&card).as_deref(), Some("app@feat/a"));
    let far = Ask {
        host: Some("gpu".into()),
        ..card.clone()
    };
    assert_eq!(integration_target(&far).as_deref(), Some("gpu:app@feat/a"));
    // Any other ask, even one that reads alike, offers none.
    assert_eq!(integration_target(&ask(q, &["yes", "no"])), None);
    assert_eq!(
        integration_target(&ask("Integrate it?", &["approve", "deny"])),
        None
    );
}

#[test]
fn an_integration_card_says_approved_or_denied_not_answered() {
    let question = || ask("Integrate app@feat/a?", &["approve", "deny"]);
    let card = |answer: &str| answered_card(&answered(question(), answer, "ada")).plain;
    assert!(
        card("deny").ends_with("⛔ denied by ada"),
        "{}",
        card("deny")
    );
    let denied = card("not before the release");
    assert!(
        denied.ends_with("⛔ denied by ada: not before the release"),
        "{denied}"
    );
    assert!(
        card("Approve").ends_with("✅ approved by ada"),
        "{}",
        card("Approve")
    );
}

#[test]
fn the_largest_cards_fit_one_telegram_message() {
    let long = "界😀<&>".repeat(2000);
    let options: Vec<String> = (0..10).map(|i| format!("{i}{}", "😀".repeat(60))).collect();
    let mut a = ask(
        &long,
        &options.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    a.details = Some(long.clone());
    a.session_name = long.clone();
    let mut s = session(&long);
    s.branch = Some(long.clone());
    let card = ask_card(&a, Some(&s));
    assert!(telegram_len(&card.html) <= TELEGRAM_LIMIT);
    let done = answered(a, &long, &long);
    assert!(telegram_len(&answered_card_with(&done, Some(&s)).html) <= TELEGRAM_LIMIT);
    assert!(card.options.iter().all(|o| o.label.chars().count() <= 60));
}

#[test]
fn a_report_renders_its_markdown() {
    let s = session("fix-login");
    let r = Report {
        id: 3,
        session_id: s.id.clone(),
        session_name: "old-name".into(),
        text: "## Fixed\nFixed `login()` for <admin>, **all** *green*:\n```sh\ncargo test\n```\n\
               - see [PR](https://x.test/pr/1)\n"
            .into(),
        created_at: NOW,
        kind: ReportKind::Report,
        announced: true,
        host: None,
    };
    let out = report(&r, Some(&s));
    assert_eq!(
        out.html,
        "📝 <b>fix-login</b> (app@main)\n<b>Fixed</b>\nFixed <code>login()</code> for &lt;admin&gt;, \
         <b>all</b> <i>green</i>:\n<pre><code class=\"language-sh\">cargo test</code></pre>\n\
         • see <a href=\"https://x.test/pr/1\">PR</a>"
    );
    assert_eq!(
        out.plain,
        "📝 fix-login (app@main)\nFixed\nFixed login() for <admin>, all green:\ncargo test\n\
         • see PR (https://x.test/pr/1)"
    );
    assert!(report(&r, None).html.starts_with("📝 <b>old-name</b>\n"));
}

#[test]
fn lists_show_roles_and_whom_asks_are_for() {
    let mut m = session("mara");
    m.role = shepherd_core::protocol::Role::Manager;
    m.project = Some("app".into());
    let r = sessions_list_at(&[m], NOW);
    assert!(
        r.plain
            .ends_with("\n🧭 manager · app · app@main · ctx 21% · connected"),
        "{}",
        r.plain
    );
    let ask = Ask {
        to: Some(shepherd_core::protocol::AskTo {
            role: shepherd_core::protocol::Role::Chief,
            repo_id: None,
            project: None,
            session_id: None,
            session_name: None,
            worker: None,
        }),
        created_at: NOW,
        ..examples::ask()
    };
    let r = asks_list_at(&[ask], NOW);
    assert!(
        r.plain.contains("#7 · fix-login · just now · → chief\n"),
        "{}",
        r.plain
    );
}

#[test]
fn the_sessions_list() {
    let a = session("fix-login");
    let mut b = session("<docs> & 📚");
    b.id = "77aa0000-1111-2222".into();
    b.connected = false;
    b.status = "thinking".into();
    b.repo = None;
    b.cwd = "/tmp/scratch".into();
    b.context_percent = None;
    b.last_seen = NOW - 2 * 3_600_000;
    b.open_asks = 2;
    let mut c = session("worker");
    c.status = "tool:bash".into();
    c.pending_messages = 1;
    let r = sessions_list_at(&[a, b, c], NOW);
    assert_eq!(
        r.html,
        "🐑 <b>3 sessions</b> (2 connected)\n\n\
         🟢 <b>fix-login</b> · idle · <code>00000001</code>\n\
         app@main · ctx 21% · connected\n\n\
         ⚪ <b>&lt;docs&gt; &amp; 📚</b> · offline · <code>111-2222</code>\n\
         scratch · seen 2h ago · ❓ 2 open asks\n\n\
         🔧 <b>worker</b> · tool:bash · <code>00000001</code>\n\
         app@main · ctx 21% · connected · ✉️ 1 pending"
    );
    consistent(&r);
    assert!(
        sessions_list_at(&[], NOW)
            .plain
            .starts_with("🐑 No sessions.")
    );
}

#[test]
fn one_session_in_detail() {
    let mut s = session("fix-login");
    s.worktree = true;
    s.open_asks = 1;
    let r = session_status_at(&s, NOW);
    assert_eq!(
        r.plain,
        "🟢 fix-login · idle · 00000001\n\
         id: 3f2a9c1b-77aa-4c1e-9d2b-000000000001\n\
         repo: app@main (worktree)\n\
         cwd: /home/ada/src/app\n\
         model: anthropic/claude-sonnet\n\
         context: 41,234 / 200,000 tokens (21%)\n\
         role: lead\n\
         presence: connected (pid 4242)\n\
         first seen: 3h ago\n\
         1 open ask · 0 pending messages"
    );
    consistent(&r);
    assert!(r.html.contains("cwd: <code>/home/ada/src/app</code>"));
    s.connected = false;
    s.repo = None;
    s.context_tokens = None;
    s.context_window = None;
    s.context_percent = None;
    let r = session_status_at(&s, NOW);
    assert!(r.plain.contains("\nrepo: none\n"));
    assert!(r.plain.contains("\ncontext: unknown\n"));
    assert!(r.plain.contains("presence: offline, last seen 3h ago"));
}

#[test]
fn the_asks_list() {
    let open = ask("Deploy <now>?", &["yes", "no"]);
    let mut done = answered(ask("Name?", &[]), "bob", "matrix:@ada:x.org");
    done.id = 9.into();
    done.session_name = "docs".into();
    let r = asks_list_at(&[open, done], NOW);
    assert_eq!(
        r.html,
        "❓ <b>1 open ask</b> (2 in all)\n\n\
         <b>#12</b> · fix-login · 3m ago\nDeploy &lt;now&gt;?\n1. yes · 2. no\n\n\
         <b>#9</b> · docs · 3m ago\nName?\n✅ answered by matrix:@ada:x.org: bob"
    );
    consistent(&r);
    assert_eq!(asks_list_at(&[], NOW).plain, "✅ No open asks.");
}

#[test]
fn the_core_status() {
    let mut status = CoreStatus {
        core_version: "0.3.0".into(),
        protocol: 1,
        pid: 4242,
        started_at: 0,
        uptime_ms: (3 * 3600 + 12 * 60) * 1000,
        state_dir: "/home/ada/.pi/agent/shepherd".into(),
        socket: "/home/ada/.pi/agent/shepherd/shepherd.sock".into(),
        sessions_connected: 2,
        sessions_known: 5,
        open_asks: 1,
        bridges: vec![BridgeInfo {
            name: "telegram".into(),
            pid: Some(4242),
            connected_since: 0,
        }],
    };
    let r = core_status(&status);
    assert_eq!(
        r.plain,
        "🐑 shepherd 0.3.0 · protocol 1\nup 3h 12m · pid 4242\n\
         sessions: 2 connected, 5 known\nopen asks: 1\nbridges: telegram (pid 4242)\n\
         state: /home/ada/.pi/agent/shepherd"
    );
    consistent(&r);
    status.bridges.clear();
    assert!(core_status(&status).plain.contains("bridges: none"));
}

#[test]
fn help_for_both_prefixes() {
    let telegram = help('/');
    assert_eq!(
        telegram.plain,
        "🐑 shepherd commands:\n\
         /sessions — list the sessions\n\
         /status [session] — one session in detail, or shepherd itself\n\
         /peek [session] — what a session is doing now: the command running and for how long, its last text and output\n\
         /diff [session] — what a session changed: the stat, and the patch as a .diff file\n\
         /asks — the open questions\n\
         /answer <ask> <text> — answer an open question (a number picks that option)\n\
         /staff — who reports to whom: chief, managers, leads (steer one from it)\n\
         /release manager <project> | chief — take a role away from its holder, connected or away (it becomes a lead and is told)\n\
         /workers — the managed workers under each owner, with state, age, tokens and cost (reply to a line to steer it)\n\
         /projects [all] — project work: each repository's manager and assignments, with state, Lead, last update, ahead/behind, asks and cost\n\
         /hosts — the other machines linked to this one: each link's state, round trip, sessions and open questions\n\
         /new <project> [--branch NAME] [--agent DEF] <task> — start a Pi session on a task in a project (in a new worktree on a new branch with --branch, as an agent definition with --agent); /new alone offers the projects to choose from\n\
         /continue [session] [message] — start an ended session again, same id, on its own session file; the message is its next one\n\
         /close <worker|session> — close a managed worker (its label or #id; or reply to its line), or a session /new or /continue started\n\
         /steer <session> <text> — tell a session what to do\n\
         /supervise <session> <goal> — pair a free supervisor session with a session, toward a goal\n\
         /goal [session] <goal> — change the goal of a session's pairing\n\
         /look [session] — have the supervisor look at its worker now\n\
         /stop [session] [then <text>] — interrupt a session's current run, then optionally steer it\n\
         /unpair [session] — end a session's pairing (its supervisor stops looking)\n\
         /help — this help\n\n\
         Reply to a message about a session to steer it; reply to a question to answer it.\n\
         Text written in a session's topic or thread answers its question when it has just one open, else steers it.\nA photo sent there reaches the session as an image its model sees; a file or voice note is saved in its .shepherd/inbox/ and named to it.\n\
         /stop interrupts what a session is doing; /unpair (or /supervise stop) ends its supervision.\n\
         In a session's topic or thread, /status, /peek, /diff, /stop, /continue, /close, /unpair, \
         /goal and /look need no session, and /supervise only the goal.\n\
         Reply to a worker's line in /workers to steer it; its ✖ close button closes it. A worker's \
         question to its owner shows as a card when the owner is a manager or the chief, or after it \
         has waited a while; its ending is said in its owner's topic or thread.\n\
         Project work (a manager handing branches to leads) is said in the manager's topic or \
         thread, tagged repo@branch: each lead's update, its state changes, and the manager's \
         questions, an integration to approve among them."
    );
    assert!(help('!').plain.contains("a reply !close closes it"));
    assert!(
        telegram
            .html
            .contains("<code>/steer &lt;session&gt; &lt;text&gt;</code>")
    );
    consistent(&telegram);
    let matrix = help('!');
    assert!(matrix.plain.contains("!status [session]"));
    assert!(!matrix.plain.contains("/status"));
}

#[test]
fn unknown_commands_and_usage_errors_answer_helpfully() {
    let r = unknown_command('!', "frob<");
    assert!(
        r.html
            .starts_with("🤔 Unknown command <code>!frob&lt;</code>.\n\n🐑 ")
    );
    assert!(r.plain.ends_with(&help('!').plain));
    let r = usage(
        '/',
        &UsageError::SteerWithoutText {
            session: "fix-login".into(),
        },
    );
    assert_eq!(
        r.plain,
        "⚠️ What should I tell fix-login? Put the text after the session.\n\
         Usage: /steer fix-login <text>\n\
         Example: /steer fix-login run the tests again, then commit"
    );
    consistent(&r);
}

#[test]
fn role_holders_topics_are_named_after_the_role() {
    let s = SessionInfo {
        role: shepherd_core::protocol::Role::Manager,
        project: Some("app".into()),
        ..examples::session_info()
    };
    assert_eq!(topic_name(&s), "🧭 manager · app");
    let s = SessionInfo {
        role: shepherd_core::protocol::Role::Chief,
        ..s
    };
    assert_eq!(topic_name(&s), "👑 chief");
}

#[test]
fn a_card_for_a_role_says_whom_it_is_for() {
    let ask = Ask {
        to: Some(shepherd_core::protocol::AskTo {
            role: shepherd_core::protocol::Role::Manager,
            repo_id: Some("/src/app/.git".into()),
            project: Some("app".into()),
            session_id: Some("m".into()),
            session_name: Some("mara".into()),
            worker: None,
        }),
        ..examples::ask()
    };
    let card = ask_card(&ask, None);
    assert!(
        card.plain
            .starts_with("❓ fix-login → manager of app\nDeploy?"),
        "{}",
        card.plain
    );
    let answered = Ask {
        state: AskState::Answered,
        answer: Some("yes".into()),
        answered_by: Some("manager of app mara".into()),
        ..ask
    };
    assert!(
        answered_card(&answered)
            .plain
            .ends_with("✅ answered by manager of app mara: yes"),
        "{}",
        answered_card(&answered).plain
    );
}

#[test]
fn topic_names() {
    let mut s = session("fix-login");
    assert_eq!(topic_name(&s), "fix-login (app@main)");
    s.name = "app@main-2".into();
    assert_eq!(topic_name(&s), "app@main-2", "a default name says it once");
    s.name = "two\nlines".into();
    s.repo = None;
    assert_eq!(topic_name(&s), "two lines");
    s.name = "  ".into();
    assert_eq!(topic_name(&s), "00000001", "the id's random end");
    s.name = "界".repeat(200);
    s.repo = Some("/src/app".into());
    let t = topic_name(&s);
    assert_eq!(crate::chat::format::utf16_len(&t), TOPIC_NAME_MAX);
    assert!(t.ends_with("… (app@main)"), "{t}");
    s.name = "😀".repeat(100);
    s.branch = Some("b".repeat(300));
    let t = topic_name(&s);
    assert!(crate::chat::format::utf16_len(&t) <= TOPIC_NAME_MAX);
    assert!(t.starts_with("😀😀") && t.ends_with('…'));
    // A linked host's session: its host first, within the same limit.
    let mut far = session("fix-login");
    far.host = Some("gpu".into());
    assert_eq!(topic_name(&far), "gpu · fix-login (app@main)");
    far.name = "界".repeat(200);
    let t = topic_name(&far);
    assert_eq!(crate::chat::format::utf16_len(&t), TOPIC_NAME_MAX);
    assert!(
        t.starts_with("gpu · 界") && t.ends_with("… (app@main)"),
        "{t}"
    );
}

#[test]
fn every_user_string_is_escaped() {
    let evil = "<script>&amp;\"x\"</script> 😀 日本";
    let mut s = session(evil);
    s.status = evil.into();
    s.model = Some(evil.into());
    s.cwd = evil.into();
    s.branch = Some(evil.into());
    let mut a = ask(evil, &[evil]);
    a.details = Some(evil.into());
    a.session_name = evil.into();
    let done = answered(a.clone(), evil, evil);
    let r = Report {
        id: 1,
        session_id: "x".into(),
        session_name: evil.into(),
        text: evil.into(),
        created_at: 0,
        kind: ReportKind::Result,
        announced: true,
        host: None,
    };
    let all = [
        ask_card(&a, Some(&s)).rendered(),
        answered_card_with(&done, Some(&s)),
        report(&r, Some(&s)),
        earlier_reports(evil, 2),
        sessions_list_at(std::slice::from_ref(&s), NOW),
        session_status_at(&s, NOW),
        asks_list_at(&[a.clone(), done.clone()], NOW),
        unknown_command('/', evil),
    ];
    for r in &all {
        assert!(!r.html.contains("<script>"), "{}", r.html);
        assert!(!r.html.contains("&amp;\""), "{}", r.html);
        assert!(text_of(&r.html).contains("<script>"), "{}", r.html);
    }
}

#[test]
fn a_result_is_a_report_marked_as_the_run_s_result() {
    let s = session("fix-login");
    let r = Report {
        id: 4,
        session_id: s.id.clone(),
        session_name: "fix-login".into(),
        text: "All <b>214</b> tests pass.".into(),
        created_at: NOW,
        kind: ReportKind::Result,
        announced: true,
        host: None,
    };
    let out = report(&r, Some(&s));
    assert_eq!(
        out.html,
        "🏁 <b>fix-login</b> (app@main) · result\nAll &lt;b&gt;214&lt;/b&gt; tests pass."
    );
    assert_eq!(
        out.plain,
        "🏁 fix-login (app@main) · result\nAll <b>214</b> tests pass."
    );
    let earlier = earlier_reports("fix-login", 3);
    assert_eq!(
        earlier.plain,
        "… and 3 earlier (shepherd reports fix-login)"
    );
    assert_eq!(
        earlier.html,
        "… and 3 earlier (<code>shepherd reports fix-login</code>)"
    );
}
