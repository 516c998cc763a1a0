//! # Linked hosts on the phone
//!
//! `/hosts` (`!hosts`): the other machines' cores linked to the one this bot runs beside,
//! each with an icon for its link's state, how long it has been so, why it failed or
//! dropped, the round trip, the far core's version, its sessions and open questions; and
//! the one line said when a link drops after it was up, or comes back after such a drop.
//! Pure (the clock passed in), the same on both phones.

use shepherd_core::protocol::{HostLink, LinkState, Millis};

use super::format::{ago, one_line, plural, truncate};
use super::html::Html;
use super::render::Rendered;

/// Longest reason shown for a link that failed or dropped.
const WHY: usize = 300;

/// The linked hosts a herd-wide listing (`/workers`, `/projects`) could not hear from,
/// and why: said under the listing, so that nothing is left out silently.
pub fn left_out(missing: &[(String, String)]) -> Option<Rendered> {
    if missing.is_empty() {
        return None;
    }
    let mut h = Html::new();
    for (i, (name, why)) in missing.iter().enumerate() {
        if i > 0 {
            h.line();
        }
        h.text("🟡 ")
            .bold(&truncate(&one_line(name), 64))
            .italic(&format!(
                " left out: {}; /hosts shows its link",
                truncate(&one_line(why), WHY)
            ));
    }
    Some(h.into())
}

/// `/hosts`: a header, then one entry per linked host; none linked: how to link one.
pub fn hosts_list(hosts: &[HostLink], now: Millis) -> Rendered {
    let mut h = Html::new();
    if hosts.is_empty() {
        h.text("🖥 No other machines are linked. On this computer: ")
            .code("shepherd hosts add NAME -- ssh -T you@machine shepherd link")
            .text(", then ")
            .code("shepherd restart")
            .text(".");
        return h.into();
    }
    let up = hosts
        .iter()
        .filter(|l| l.state == LinkState::Connected)
        .count();
    h.text("🖥 ").bold("Hosts").text(&format!(
        ": {}, {up} connected",
        plural(hosts.len() as u64, "linked machine", "linked machines")
    ));
    for l in hosts {
        h.line().text(match l.state {
            LinkState::Connected => "🟢 ",
            LinkState::Connecting => "🟡 ",
            LinkState::Failed => "🔴 ",
        });
        h.bold(&truncate(&one_line(&l.name), 64));
        match l.state {
            LinkState::Connected => {
                let rtt = l
                    .rtt_us
                    .map(|us| format!(", {:.1} ms", us as f64 / 1000.0))
                    .unwrap_or_default();
                let version = l
                    .core_version
                    .as_deref()
                    .map(|v| format!(", shepherd {v}"))
                    .unwrap_or_default();
                h.text(&format!(
                    " · connected {}{rtt}{version} · {}, {}",
                    ago(l.since, now),
                    plural(u64::from(l.sessions), "session", "sessions"),
                    plural(u64::from(l.open_asks), "open question", "open questions"),
                ));
            }
            LinkState::Connecting => {
                h.text(&format!(" · connecting since {}", ago(l.since, now)));
                if let Some(why) = &l.error {
                    h.line()
                        .italic(&format!("   dropped: {}", truncate(&one_line(why), WHY)));
                }
            }
            LinkState::Failed => {
                h.text(&format!(" · failed {}", ago(l.since, now)));
                if let Some(why) = &l.error {
                    h.line()
                        .italic(&format!("   {}", truncate(&one_line(why), WHY)));
                }
            }
        }
    }
    h.into()
}

/// A link dropped (its sessions are unreachable, not gone) or came back: one line, said
/// once each time in the chat's main place.
pub fn link_changed(link: &HostLink) -> Rendered {
    let mut h = Html::new();
    let name = truncate(&one_line(&link.name), 64);
    match link.state {
        LinkState::Connected => {
            h.text("🟢 ").bold(&name).text(&format!(
                " is back: {}, {}.",
                plural(u64::from(link.sessions), "session", "sessions"),
                plural(u64::from(link.open_asks), "open question", "open questions"),
            ));
        }
        _ => {
            h.text("🟡 Lost the link to ")
                .bold(&name)
                .text(": its sessions are unreachable until it is back (shepherd keeps trying).");
            if let Some(why) = &link.error {
                h.line().italic(&truncate(&one_line(why), WHY));
            }
        }
    }
    h.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    use shepherd_core::examples::host_link as link;

    #[test]
    fn each_host_says_where_its_link_stands_and_why() {
        let text = hosts_list(
            &[
                link("gpu", LinkState::Connected, None),
                link(
                    "laptop",
                    LinkState::Failed,
                    Some("ssh: Permission denied (publickey)"),
                ),
            ],
            90_000,
        )
        .plain;
        assert!(
            text.starts_with("🖥 Hosts: 2 linked machines, 1 connected"),
            "{text}"
        );
        assert!(text.contains("🟢 gpu · connected"), "{text}");
        assert!(
            text.contains("1.8 ms, shepherd 0.1.0 · 2 sessions, 1 open question"),
            "{text}"
        );
        assert!(text.contains("🔴 laptop · failed"), "{text}");
        assert!(text.contains("Permission denied (publickey)"), "{text}");
    }

    #[test]
    fn a_drop_and_a_return_are_one_line_each() {
        let dropped = link_changed(&link(
            "gpu",
            LinkState::Connecting,
            Some("the link command exited (signal: 9)"),
        ))
        .plain;
        assert!(
            dropped.starts_with("🟡 Lost the link to gpu: its sessions are unreachable"),
            "{dropped}"
        );
        assert!(dropped.contains("signal: 9"), "{dropped}");
        let back = link_changed(&link("gpu", LinkState::Connected, None)).plain;
        assert_eq!(back, "🟢 gpu is back: 2 sessions, 1 open question.");
    }

    #[test]
    fn no_hosts_says_how_to_link_one() {
        let text = hosts_list(&[], 0).plain;
        assert!(text.contains("shepherd hosts add NAME"), "{text}");
    }
}
