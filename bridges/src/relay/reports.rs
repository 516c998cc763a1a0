//! # Reports and results on the phone, exactly once per chat
//!
//! A session's reports and the results of its runs go to its place (topic or thread) as
//! they are announced (`report_posted`). The platform remembers, per core store and chat,
//! the id of the last one it posted ([`Platform::last_report`]); report ids only grow
//! within a store, so an event at or below it was already posted (one listed by a catch-up
//! and then arriving as an event) and is skipped. After (re)connecting, the relay asks the
//! core for what was announced since ([`Relay::catch_up`]) and posts, per session, the
//! newest [`CATCH_UP`] with a line saying how many earlier ones there were and how to read
//! them (`shepherd reports <session>`). A bridge that never posted starts from the core's
//! newest report: it does not replay the history of a core it meets for the first time.
//!
//! A linked host's reports (`host` set) come through the home core as its link announces
//! them, live and, after the link dropped, what was announced meanwhile: posted once per
//! host by id, the platform keeping each host's cursor like a store's (`host:<name>`).
//! After (re)connecting, the bridge asks each connected host (through the core) for what
//! came since ([`Relay::catch_up_hosts`]).

use std::collections::HashMap;

use shepherd_core::client::ClientError;
use shepherd_core::protocol::{LinkState, Report, SessionId};

use super::{Platform, Relay};
use crate::chat::render;

/// How many of a session's missed reports a catch-up posts; older ones get one line.
pub const CATCH_UP: usize = 5;

/// Where the relay is in the core's report ids.
#[derive(Debug, Clone, Default)]
pub struct ReportCursor {
    /// The core's store (ids are unique within one); none until the first catch-up.
    pub store: Option<String>,
    /// Events at or below this id were posted by the catch-up: skip them.
    pub posted: u64,
    /// What the platform's store holds (never lowered): a restart catches up from here.
    pub saved: u64,
    /// A linked host's newest report posted here, by host (its ids are its own core's),
    /// read from the platform's store on first need.
    pub far: std::collections::HashMap<String, u64>,
}

impl<P: Platform> Relay<P> {
    /// A report or result announced by the core: posted in its session's place once.
    pub(super) async fn on_report(&mut self, report: &Report) {
        if !report.announced {
            return;
        }
        if let Some(host) = &report.host {
            let key = host_key(host);
            let platform = &self.platform;
            let posted = self
                .reports
                .far
                .entry(host.clone())
                .or_insert_with(|| platform.last_report(&key).unwrap_or(0));
            if report.id <= *posted {
                return;
            }
            *posted = report.id;
            let rendered = render::report(report, self.sessions.get(&report.session_id));
            let what = report.kind.as_str();
            self.post_about(&report.session_id, rendered, what).await;
            self.platform.set_last_report(&key, report.id);
            return;
        }
        if report.id <= self.reports.posted {
            return; // Posted by the catch-up already.
        }
        self.post_report(report).await;
    }

    async fn post_report(&mut self, report: &Report) {
        let rendered = render::report(report, self.sessions.get(&report.session_id));
        let what = report.kind.as_str();
        self.post_about(&report.session_id, rendered, what).await;
        self.posted_report(report.id);
    }

    /// Remember (in the platform's store) that everything up to `id` was posted here.
    fn posted_report(&mut self, id: u64) {
        let cursor = &mut self.reports;
        cursor.posted = cursor.posted.max(id);
        if let Some(store) = &cursor.store
            && id > cursor.saved
        {
            cursor.saved = id;
            self.platform.set_last_report(store, id);
            tracing::debug!(report = id, "{}: reports up to {id} posted", P::NAME);
        }
    }

    /// After (re)connecting: post what each connected linked host announced since the
    /// last of its reports posted here (a host met for the first time: from now on).
    pub(super) async fn catch_up_hosts(&mut self) -> Result<(), ClientError> {
        let hosts = self.core.hosts().await?;
        for link in hosts.iter().filter(|l| l.state == LinkState::Connected) {
            let key = host_key(&link.name);
            let Some(last) = self.platform.last_report(&key) else {
                let newest = self.core.reports_on(&link.name, None, Some(1)).await?;
                let start = newest.last().map_or(0, |r| r.id);
                self.platform.set_last_report(&key, start);
                continue;
            };
            for report in self.core.reports_on(&link.name, Some(last), None).await? {
                self.on_report(&report).await;
            }
        }
        Ok(())
    }

    /// After (re)connecting: post what was announced while this bridge was away, the
    /// newest [`CATCH_UP`] per session, each session's older ones as one line.
    pub(super) async fn catch_up(&mut self) -> Result<(), ClientError> {
        // Listing first (re)connects the request link, so the store id read after it is
        // the one the ids belong to.
        let newest = self.core.reports(None, Some(1)).await?;
        let store = self.core.store_id().await?;
        let Some(last) = self.platform.last_report(&store) else {
            // Events come from the subscription, made before this listing: any of them,
            // even one at or below the newest listed, is new here and is posted.
            let start = newest.last().map_or(0, |r| r.id);
            tracing::info!(
                store,
                start,
                "{}: first connection to this core: posting reports from now on",
                P::NAME
            );
            self.platform.set_last_report(&store, start);
            self.reports = ReportCursor {
                store: Some(store),
                posted: 0,
                saved: start,
                far: std::mem::take(&mut self.reports.far),
            };
            return Ok(());
        };
        self.reports = ReportCursor {
            store: Some(store),
            posted: last,
            saved: last,
            far: std::mem::take(&mut self.reports.far),
        };
        let missed: Vec<Report> = self
            .core
            .reports(Some(last), None)
            .await?
            .into_iter()
            .filter(|r| r.announced)
            .collect();
        if missed.is_empty() {
            return Ok(());
        }
        let mut per_session: HashMap<SessionId, usize> = HashMap::new();
        for r in &missed {
            *per_session.entry(r.session_id.clone()).or_default() += 1;
        }
        let mut seen: HashMap<SessionId, usize> = HashMap::new();
        tracing::info!(
            missed = missed.len(),
            "{}: posting reports missed while away",
            P::NAME
        );
        for report in &missed {
            let total = per_session[&report.session_id];
            let index = seen.entry(report.session_id.clone()).or_default();
            *index += 1;
            let earlier = total.saturating_sub(CATCH_UP);
            if *index <= earlier {
                continue;
            }
            if *index == earlier + 1 && earlier > 0 {
                let name = self
                    .sessions
                    .get(&report.session_id)
                    .map_or(report.session_name.as_str(), |s| s.name.as_str())
                    .to_string();
                let line = render::earlier_reports(&name, earlier);
                self.post_about(&report.session_id, line, "reports").await;
            }
            self.post_report(report).await;
        }
        // The skipped ones count as posted too (the line stands for them).
        if let Some(max) = missed.iter().map(|r| r.id).max() {
            self.posted_report(max);
        }
        Ok(())
    }
}

/// Where the platform keeps a linked host's report cursor (beside the core stores').
fn host_key(host: &str) -> String {
    format!("host:{host}")
}
