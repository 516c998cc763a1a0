//! Reports and results: keeping what a session posts (the `report` tool, and the final text
//! of each run the extension sends as `result`), deciding with the `results` setting which
//! results reach the bridges, and listing what was kept (`list_reports`, for
//! `shepherd reports` and for a bridge catching up after it was away).

use rusqlite::Connection;

use super::{Cx, HubError, HubResult, Out, State};
use crate::clock::now_ms;
use crate::protocol::{ErrorCode, Report, ReportKind, ResultsMode, ServerMsg, requests};
use crate::store::{self, reports::NewReport};

/// What a session posted: its text, whether it is a report or a run's result, and the
/// session's idempotency key.
pub(super) struct Posted {
    pub text: String,
    pub kind: ReportKind,
    pub key: Option<String>,
}

impl State {
    /// The name a session's reports carry: its live name, else its id.
    fn name_of(&self, session_id: &crate::protocol::SessionId) -> String {
        self.presence
            .live(session_id)
            .map_or_else(|| session_id.to_string(), |l| l.name.clone())
    }

    /// Keep a report or result from the session on `cx`, answer `reported`, and announce
    /// it to the subscribers when `announced`.
    fn keep_report(
        &mut self,
        cx: Cx,
        Posted { text, kind, key }: Posted,
        announce: impl FnOnce(&Connection, &crate::protocol::SessionId) -> HubResult<bool>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let session_id = self.presence.registered(cx.conn)?.clone();
        if text.trim().is_empty() {
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                format!("{} text must not be empty", kind.as_str()),
            ));
        }
        super::keys::check_key(key.as_deref())?;
        // Sent again with its key (the reply was lost): what was kept then, not a second one.
        if let Some(key) = &key
            && let Some(kept) = store::reports::by_key(db, &session_id, key)?
        {
            out.send(
                cx.conn,
                &ServerMsg::Reported {
                    id: cx.id,
                    report: kept,
                },
            );
            return Ok(());
        }
        // Measured as its `reported` frame (the `report_posted` event is smaller) before it
        // is kept: the probe has no text, the text's own length is added.
        let probe = ServerMsg::Reported {
            id: u64::MAX,
            report: Report {
                id: u64::MAX,
                session_id: session_id.clone(),
                session_name: self.name_of(&session_id),
                text: String::new(),
                created_at: now_ms(),
                kind,
                announced: false,
                host: None,
            },
        };
        let text_len = super::fits::json_len(&text) - 2;
        self.check_frame(
            &probe,
            text_len,
            &format!("this {}", kind.as_str()),
            "shorten it, or put the long part in a file and give its path",
        )?;
        let announced = announce(db, &session_id)?;
        let posted = Posted { text, kind, key };
        let report = self.store_report(session_id, posted, announced, db, out)?;
        out.send(cx.conn, &ServerMsg::Reported { id: cx.id, report });
        Ok(())
    }

    /// Keep a report or result of `session_id` and, when `announced`, tell the
    /// subscribers (`report_posted`); returns it as kept.
    pub(super) fn store_report(
        &self,
        session_id: crate::protocol::SessionId,
        Posted { text, kind, key }: Posted,
        announced: bool,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<Report> {
        let now = now_ms();
        let report_id = store::reports::insert(
            db,
            &NewReport {
                session_id: &session_id,
                text: &text,
                kind,
                announced,
                created_at: now,
                key: key.as_deref(),
            },
        )?;
        let report = Report {
            id: report_id,
            session_name: self.name_of(&session_id),
            session_id,
            text,
            created_at: now,
            kind,
            announced,
            host: None,
        };
        if announced {
            self.presence.broadcast(
                &ServerMsg::ReportPosted {
                    report: report.clone(),
                },
                out,
            );
        }
        Ok(report)
    }

    pub(super) fn report(
        &mut self,
        cx: Cx,
        req: requests::Report,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let announce = |_: &Connection, _: &crate::protocol::SessionId| Ok(true);
        let posted = Posted {
            text: req.text,
            kind: ReportKind::Report,
            key: req.key,
        };
        self.keep_report(cx, posted, announce, db, out)
    }

    /// A run's final text (`repo`: the session's repository as read when the run settled).
    /// The session's own `results` setting wins over the core's.
    pub(super) fn run_result(
        &mut self,
        cx: Cx,
        req: requests::RunResult,
        repo: Option<crate::git::RepoContext>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        // A managed worker's run: its result is its owner's (mailed once), not the phone's.
        let session = self.presence.registered(cx.conn)?.clone();
        super::keys::check_key(req.key.as_deref())?;
        // Sent again with its key (the reply was lost): what was kept then, acted on once.
        if let Some(key) = &req.key
            && let Some(kept) = store::reports::by_key(db, &session, key)?
        {
            out.send(
                cx.conn,
                &ServerMsg::Reported {
                    id: cx.id,
                    report: kept,
                },
            );
            return Ok(());
        }
        // A run's end is never refused for its size: a text that could not be sent whole
        // is cut, and says so.
        let text = self.fit_result(req.text);
        let worker = self.worker_run_result(&session, &text, db, out)?;
        // An assigned Lead's run: an update for its Manager role (the phones see it as
        // `assignment_update`), not an ordinary result.
        let lead = !worker && self.lead_run_result(&session, &text, repo, db, out)?;
        let mode = match worker || lead {
            true => ResultsMode::Off,
            false => req.results.unwrap_or(self.facts.results),
        };
        let announce = move |db: &Connection, session: &crate::protocol::SessionId| {
            Ok(match mode {
                ResultsMode::All => true,
                ResultsMode::Off => false,
                ResultsMode::AsksOnly => store::reports::asked_since_last_result(db, session)?,
            })
        };
        let posted = Posted {
            text,
            kind: ReportKind::Result,
            key: req.key,
        };
        self.keep_report(cx, posted, announce, db, out)
    }

    pub(super) fn list_reports(
        &self,
        cx: Cx,
        req: requests::ListReports,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let session = match req.session.as_deref() {
            Some(selector) => Some(self.resolve(selector, db)?.id),
            None => None,
        };
        // Every report kept can be many: read off the hub.
        let (id, after, limit) = (cx.id, req.after, req.limit);
        self.read_off_hub(cx, out, move |db| {
            let filter = store::reports::Filter {
                session: session.as_ref(),
                after,
                limit,
            };
            let reports = store::reports::list(db, &filter)?;
            Ok(ServerMsg::Reports { id, reports })
        });
        Ok(())
    }
}
