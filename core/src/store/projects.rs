//! Work assignments' records, the approvals waiting for the human, and the Manager role's
//! project mail. The hub is the only writer and decides every transition; this keeps the
//! rows and answers the lookups (by branch in a repository, by the Lead's session).

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::unread::Unread;
use crate::protocol::{
    AskId, Assignment, AssignmentId, AssignmentState, LeadState, MessageId, SessionId,
    WorkerBackend,
};

/// Whether an assignment's Lead has a process, as the core launched it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Process {
    /// No process (stopped, exited, or not relaunched yet).
    None,
    /// Launched (or being launched); its session has not registered yet.
    Starting,
    /// Its session registered with the launch nonce.
    Bound,
}

impl Process {
    fn parse(s: &str) -> Process {
        match s {
            "starting" => Process::Starting,
            "bound" => Process::Bound,
            _ => Process::None,
        }
    }
}

/// An assignment row with what only the core needs.
#[derive(Debug, Clone, PartialEq)]
pub struct AssignmentRow {
    /// The record; `lead` is from the row alone (`running` once bound): the hub corrects
    /// it with presence ([`AssignmentRow::record`]).
    pub assignment: Assignment,
    pub primary_root: String,
    pub nonce: String,
    pub process: Process,
    pub pane: Option<String>,
    pub bound_pid: Option<u32>,
    pub session_file: Option<String>,
    pub model: Option<String>,
    /// The whole task (the record carries its first 200 characters).
    pub task: String,
}

impl AssignmentRow {
    /// The record as a client sees it, given whether the Lead's session is connected.
    pub fn record(&self, connected: bool) -> Assignment {
        let mut a = self.assignment.clone();
        a.lead = match (self.process, connected) {
            // Stopped on purpose: it is going, even while its connection lingers.
            (Process::None, _) => LeadState::Stopped,
            (_, true) => LeadState::Running,
            (Process::Starting, false) => LeadState::Starting,
            // Bound, away: its process may be reconnecting (a core restart).
            (Process::Bound, false) if a.pid.is_some() => LeadState::Starting,
            _ => LeadState::Stopped,
        };
        if a.lead == LeadState::Stopped {
            a.pid = None;
        }
        a
    }
}

const SELECT: &str = "SELECT a.id, a.repo_id, a.project, a.branch, a.current_branch, a.checkout,
    a.session_id, a.state, a.backend, a.pid, a.task, a.created_by, a.created_by_id,
    a.created_at, a.updated_at, a.last_update_at, a.last_update, a.head, a.integrated_sha,
    a.cleanup_pending, a.primary_root, a.nonce, a.process, a.pane, a.bound_pid,
    a.session_file, a.model,
    (SELECT COUNT(*) FROM asks k WHERE k.session_id = a.session_id AND k.state = 'open')
    FROM assignments a";

fn preview(text: &str) -> String {
    super::workers::task_preview(text)
}

fn from_row(row: &Row<'_>) -> rusqlite::Result<AssignmentRow> {
    let task: String = row.get(10)?;
    let backend: String = row.get(8)?;
    let process = Process::parse(&row.get::<_, String>(22)?);
    Ok(AssignmentRow {
        assignment: Assignment {
            id: row.get(0)?,
            repo_id: row.get(1)?,
            project: row.get(2)?,
            branch: row.get(3)?,
            current_branch: row.get(4)?,
            checkout: row.get(5)?,
            session_id: row.get(6)?,
            state: AssignmentState::parse(&row.get::<_, String>(7)?),
            lead: match process {
                Process::Bound => LeadState::Running,
                Process::Starting => LeadState::Starting,
                Process::None => LeadState::Stopped,
            },
            backend: WorkerBackend::parse(&backend).unwrap_or(WorkerBackend::Headless),
            pid: row.get(9)?,
            task: preview(&task),
            created_by: row.get(11)?,
            created_by_id: row.get(12)?,
            created_at: row.get(13)?,
            updated_at: row.get(14)?,
            last_update_at: row.get(15)?,
            last_update: row.get(16)?,
            head: row.get(17)?,
            ahead: None,
            behind: None,
            open_asks: row.get(27)?,
            usage: None,
            integrated_sha: row.get(18)?,
            cleanup_pending: row.get(19)?,
            checkout_missing: None,
            host: None,
        },
        primary_root: row.get(20)?,
        nonce: row.get(21)?,
        process,
        pane: row.get(23)?,
        bound_pid: row.get(24)?,
        session_file: row.get(25)?,
        model: row.get(26)?,
        task,
    })
}

/// A new assignment, before it has an id.
pub struct NewAssignment<'a> {
    pub repo_id: &'a str,
    pub project: &'a str,
    pub primary_root: &'a str,
    pub branch: &'a str,
    pub checkout: &'a str,
    pub head: &'a str,
    pub session_id: &'a SessionId,
    pub task: &'a str,
    pub created_by: &'a str,
    pub created_by_id: Option<&'a SessionId>,
    pub backend: WorkerBackend,
    pub nonce: &'a str,
    pub model: Option<&'a str>,
    pub now: u64,
}

/// Record an active assignment whose Lead is about to be launched.
pub fn insert(conn: &Connection, a: &NewAssignment<'_>) -> rusqlite::Result<AssignmentId> {
    conn.prepare_cached(
        "INSERT INTO assignments (repo_id, project, primary_root, branch, checkout, session_id,
            state, task, created_by, created_by_id, backend, nonce, process, model,
            current_branch, head, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'active', ?7, ?8, ?9, ?10, ?11, 'starting', ?12, ?4,
            ?13, ?14, ?14)",
    )?
    .execute(params![
        a.repo_id,
        a.project,
        a.primary_root,
        a.branch,
        a.checkout,
        a.session_id,
        a.task,
        a.created_by,
        a.created_by_id,
        a.backend.as_str(),
        a.nonce,
        a.model,
        a.head,
        a.now,
    ])?;
    Ok(AssignmentId::new(conn.last_insert_rowid() as u64))
}

pub fn get(conn: &Connection, id: AssignmentId) -> rusqlite::Result<Option<AssignmentRow>> {
    conn.prepare_cached(&format!("{SELECT} WHERE a.id = ?1"))?
        .query_row([id], from_row)
        .optional()
}

/// The open (not retired) assignment of `branch` in a repository.
pub fn open_by_branch(
    conn: &Connection,
    repo_id: &str,
    branch: &str,
) -> rusqlite::Result<Option<AssignmentRow>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE a.repo_id = ?1 AND a.branch = ?2 AND a.state != 'retired'"
    ))?
    .query_row(params![repo_id, branch], from_row)
    .optional()
}

/// Open assignments of `branch` in any repository (the CLI names a branch alone).
pub fn open_by_branch_anywhere(
    conn: &Connection,
    branch: &str,
) -> rusqlite::Result<Vec<AssignmentRow>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE a.branch = ?1 AND a.state != 'retired' ORDER BY a.id"
    ))?
    .query_map([branch], from_row)?
    .collect()
}

/// The open assignments naming `session` as executor. More than one is ambiguous: the
/// caller fails closed.
pub fn open_by_session(
    conn: &Connection,
    session: &SessionId,
) -> rusqlite::Result<Vec<AssignmentRow>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE a.session_id = ?1 AND a.state != 'retired' ORDER BY a.id"
    ))?
    .query_map([session], from_row)?
    .collect()
}

/// The open assignment whose checkout is `path`.
pub fn open_by_checkout(conn: &Connection, path: &str) -> rusqlite::Result<Option<AssignmentRow>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE a.checkout = ?1 AND a.state != 'retired' ORDER BY a.id LIMIT 1"
    ))?
    .query_row([path], from_row)
    .optional()
}

/// Open assignments (of one repository, or all), oldest first.
/// The retired assignments (of `repo_id`, when given), the newest first, at most `limit`.
pub fn list_retired(
    conn: &Connection,
    repo_id: Option<&str>,
    limit: u32,
) -> rusqlite::Result<Vec<AssignmentRow>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE a.state = 'retired' AND (?1 IS NULL OR a.repo_id = ?1)
            ORDER BY a.updated_at DESC, a.id DESC LIMIT ?2"
    ))?
    .query_map(params![repo_id, limit], from_row)?
    .collect()
}

pub fn list_open(conn: &Connection, repo_id: Option<&str>) -> rusqlite::Result<Vec<AssignmentRow>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE a.state != 'retired' AND (?1 IS NULL OR a.repo_id = ?1)
            ORDER BY a.project, a.id"
    ))?
    .query_map([repo_id], from_row)?
    .collect()
}

pub fn set_state(
    conn: &Connection,
    id: AssignmentId,
    state: AssignmentState,
    now: u64,
) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE assignments SET state = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute(params![id, state.as_str(), now])?;
    Ok(())
}

/// A launch is on its way with a fresh `nonce` (a resume, a restart).
pub fn launching(
    conn: &Connection,
    id: AssignmentId,
    nonce: &str,
    now: u64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE assignments SET nonce = ?2, process = 'starting', pid = NULL, pane = NULL,
            bound_pid = NULL, updated_at = ?3 WHERE id = ?1",
    )?
    .execute(params![id, nonce, now])?;
    Ok(())
}

/// The launched process (headless: the child; tmux: the pane's process).
pub fn set_process(
    conn: &Connection,
    id: AssignmentId,
    pid: u32,
    pane: Option<&str>,
    now: u64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE assignments SET pid = ?2, pane = ?3, updated_at = ?4 WHERE id = ?1",
    )?
    .execute(params![id, pid, pane, now])?;
    Ok(())
}

/// The Lead's session registered with the nonce.
pub fn bind(
    conn: &Connection,
    id: AssignmentId,
    pid: Option<u32>,
    session_file: Option<&str>,
    now: u64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE assignments SET process = 'bound', bound_pid = ?2,
            session_file = COALESCE(?3, session_file), updated_at = ?4 WHERE id = ?1",
    )?
    .execute(params![id, pid, session_file, now])?;
    Ok(())
}

/// The Lead has no process any more (its nonce is spent: nothing registers with it).
pub fn stopped(conn: &Connection, id: AssignmentId, now: u64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE assignments SET process = 'none', pid = NULL, pane = NULL, bound_pid = NULL,
            nonce = '', updated_at = ?2 WHERE id = ?1",
    )?
    .execute(params![id, now])?;
    Ok(())
}

/// The Lead finished a turn: its update's time and preview, and the checkout's HEAD.
pub fn updated(
    conn: &Connection,
    id: AssignmentId,
    text: &str,
    current_branch: Option<&str>,
    head: Option<&str>,
    now: u64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE assignments SET last_update_at = ?2, last_update = ?3,
            current_branch = COALESCE(?4, current_branch), head = COALESCE(?5, head),
            updated_at = ?2 WHERE id = ?1",
    )?
    .execute(params![id, now, preview(text), current_branch, head])?;
    Ok(())
}

/// The primary branch was fast-forwarded to `sha`; `cleanup_pending` until the checkout
/// is removed.
pub fn integrated(
    conn: &Connection,
    id: AssignmentId,
    sha: &str,
    cleanup_pending: bool,
    now: u64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE assignments SET integrated_sha = ?2, cleanup_pending = ?3, updated_at = ?4
            WHERE id = ?1",
    )?
    .execute(params![id, sha, cleanup_pending, now])?;
    Ok(())
}

/// Retire an assignment: its still-pending project mail is dropped (the branch, the
/// session and its workers' records are kept). Returns how many messages were dropped.
pub fn retire(
    conn: &Connection,
    unread: &Unread,
    id: AssignmentId,
    now: u64,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE assignments SET state = 'retired', cleanup_pending = 0, process = 'none',
            pid = NULL, pane = NULL, bound_pid = NULL, updated_at = ?2 WHERE id = ?1",
    )?
    .execute(params![id, now])?;
    conn.prepare_cached("DELETE FROM approvals WHERE assignment_id = ?1")?
        .execute([id])?;
    super::messages::delete_unread(
        conn,
        unread,
        "DELETE FROM messages WHERE assignment_id = ?1 AND acked_at IS NULL RETURNING id",
        [id],
    )
}

/// Mark a stored message as the Manager role's project mail about `assignment`.
pub fn tag_mail(
    conn: &Connection,
    message: MessageId,
    assignment: Option<AssignmentId>,
    repo_id: &str,
) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE messages SET assignment_id = ?2, role_repo = ?3 WHERE id = ?1")?
        .execute(params![message, assignment, repo_id])?;
    Ok(())
}

/// Hand the role's unread project mail of `repo_id` to its new Manager `holder` (from the
/// placeholder mailbox, or from a previous holder that never read it). Returns how many.
pub fn readdress_role_mail(
    conn: &Connection,
    unread: &Unread,
    repo_id: &str,
    holder: &SessionId,
) -> rusqlite::Result<usize> {
    let ids = super::messages::changed_ids(
        conn,
        "UPDATE messages SET recipient = ?2
            WHERE role_repo = ?1 AND acked_at IS NULL AND recipient != ?2 RETURNING id",
        params![repo_id, holder],
    )?;
    for &id in &ids {
        unread.add(holder, id);
    }
    Ok(ids.len())
}

/// The mailbox project mail waits in while no Manager holds `repo_id`'s lease: no
/// session ever has this id, so nothing is delivered from it until a holder takes it over.
pub fn role_mailbox(repo_id: &str) -> SessionId {
    SessionId::from(format!("manager-role:{repo_id}").as_str())
}

/// An approval the human is asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    pub ask_id: AskId,
    pub assignment_id: AssignmentId,
    pub sha: String,
    pub manager_id: SessionId,
}

pub fn add_approval(conn: &Connection, a: &Approval) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO approvals (ask_id, assignment_id, sha, manager_id) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![a.ask_id, a.assignment_id, a.sha, a.manager_id])?;
    Ok(())
}

fn approval_row(r: &Row<'_>) -> rusqlite::Result<Approval> {
    Ok(Approval {
        ask_id: r.get(0)?,
        assignment_id: r.get(1)?,
        sha: r.get(2)?,
        manager_id: r.get(3)?,
    })
}

pub fn approval(conn: &Connection, ask: AskId) -> rusqlite::Result<Option<Approval>> {
    conn.prepare_cached(
        "SELECT ask_id, assignment_id, sha, manager_id FROM approvals WHERE ask_id = ?1",
    )?
    .query_row([ask], approval_row)
    .optional()
}

/// The approvals pending for an assignment (at most one per sha in practice).
pub fn approvals_of(
    conn: &Connection,
    assignment: AssignmentId,
) -> rusqlite::Result<Vec<Approval>> {
    conn.prepare_cached(
        "SELECT ask_id, assignment_id, sha, manager_id FROM approvals WHERE assignment_id = ?1
            ORDER BY ask_id",
    )?
    .query_map([assignment], approval_row)?
    .collect()
}

pub fn drop_approval(conn: &Connection, ask: AskId) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM approvals WHERE ask_id = ?1")?
        .execute([ask])?;
    Ok(())
}

/// The newest assignment of `branch` (in one repository, or any), whatever its state.
pub fn newest_by_branch(
    conn: &Connection,
    repo_id: Option<&str>,
    branch: &str,
) -> rusqlite::Result<Option<AssignmentRow>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE a.branch = ?2 AND (?1 IS NULL OR a.repo_id = ?1) ORDER BY a.id DESC LIMIT 1"
    ))?
    .query_row(params![repo_id, branch], from_row)
    .optional()
}

/// Undo a delegation whose Lead never started: the row and the mail waiting for its
/// session. Returns how many messages were dropped.
pub fn delete(
    conn: &Connection,
    unread: &Unread,
    id: AssignmentId,
    session: &SessionId,
) -> rusqlite::Result<usize> {
    conn.prepare_cached("DELETE FROM assignments WHERE id = ?1")?
        .execute([id])?;
    super::messages::drop_pending(conn, unread, session)
}
