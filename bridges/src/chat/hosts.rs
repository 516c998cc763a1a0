//! # Linked hosts on the phone
//!
//! `/hosts` (`!hosts`): the other machines' cores linked to the one this bot runs beside,
//! each with an icon for its link's state, how long it has been so, why it failed or
//! dropped, the round trip, the far core's version, its sessions and open questions. Pure
//! (the clock passed in), the same on both phones.

use shepherd_core::protocol::{HostLink, LinkState, Millis};

use super::format::{ago, one_line, plural, truncate};
use super::html::Html;
use super::render::Rendered;

/// Longest reason shown for a link that failed or dropped.
const WHY: usize = 300;

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
    fn no_hosts_says_how_to_link_one() {
        let text = hosts_list(&[], 0).plain;
        assert!(text.contains("shepherd hosts add NAME"), "{text}");
    }
}
