//! `list_projects`: the open assignments grouped by repository, with what only git and the
//! session files know: the primary branch and ahead/behind read on the git lane, then the
//! Leads' usage from their session files on a blocking thread of its own (never on the lane
//! that delegations and integrations queue on). The same pass is the inventory that
//! retires an assignment whose checkout git has verifiably forgotten; an inventory that
//! fails keeps it, and a checkout git still records but not at its path (moved, renamed or
//! deleted by hand) is kept and reported (`checkout_missing`) with how to repair it: a
//! listing never changes git's records. `list_staff` carries the assignments
//! with ahead/behind read on the lane too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::{Actor, GitDone, GitJob};
use crate::git::worktrees::{self, Presence};
use crate::hub::{Cx, HubResult, Out, State};
use crate::protocol::requests::ListProjects;
use crate::protocol::{Assignment, AssignmentId, Project, Role, ServerMsg, UsageTotals};
use crate::store;
use crate::usage;

/// What the git lane reads for one assignment.
/// Retired assignments `list_projects {all}` lists, at most (the newest).
const RETIRED_LISTED: u32 = 200;

struct Facts {
    presence: Presence,
    ahead_behind: Option<(usize, usize)>,
    usage: Option<UsageTotals>,
}

impl State {
    pub(in crate::hub) fn list_projects(
        &mut self,
        cx: Cx,
        req: ListProjects,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let all = req.all;
        let repo = match self.project_actor(cx, db)? {
            Actor::Manager { lease, .. } => lease.repo_id,
            Actor::Human => None,
        };
        let rows = store::projects::list_open(db, repo.as_deref())?;
        let mut jobs = Vec::with_capacity(rows.len());
        let mut scopes = Vec::with_capacity(rows.len());
        for row in &rows {
            let tree = crate::hub::usage::owned_sessions(db, &row.assignment.session_id)?;
            scopes.push((row.assignment.id, crate::hub::usage::scope_of(db, tree)?));
            jobs.push((
                row.assignment.id,
                PathBuf::from(&row.primary_root),
                PathBuf::from(&row.assignment.checkout),
                row.assignment.branch.clone(),
            ));
        }
        let reply = Some((cx.conn, cx.id));
        // Git on the lane; then the session files (the sessions' word: untrusted) on a
        // blocking thread of their own, so that nothing queued on the lane waits for them.
        let job: GitJob = Box::new(move || {
            let mut facts = Vec::with_capacity(jobs.len());
            let mut primaries: BTreeMap<PathBuf, Option<String>> = BTreeMap::new();
            for (id, primary, checkout, branch) in jobs {
                primaries
                    .entry(primary.clone())
                    .or_insert_with(|| worktrees::head(&primary).ok().and_then(|(b, _)| b));
                facts.push((id, read_facts(&primary, &checkout, &branch)));
            }
            GitDone {
                reply,
                then: Box::new(move |state, _db, _out| {
                    state.blocking_then(
                        reply,
                        move || {
                            let mut facts = facts;
                            for ((_, f), (_, scope)) in facts.iter_mut().zip(&scopes) {
                                let report = usage::build(scope);
                                f.usage = (report.total.records > 0).then_some(report.total);
                            }
                            facts
                        },
                        move |state, facts, db, out| {
                            state.projects_read(cx, repo, all, facts, primaries, db, out)
                        },
                    );
                    Ok(())
                }),
            }
        });
        out.git.push(job);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn projects_read(
        &mut self,
        cx: Cx,
        repo: Option<String>,
        all: bool,
        facts: Vec<(AssignmentId, Facts)>,
        primaries: BTreeMap<PathBuf, Option<String>>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let mut by_id: BTreeMap<AssignmentId, Facts> = facts.into_iter().collect();
        let mut projects: BTreeMap<String, Project> = BTreeMap::new();
        for row in store::projects::list_open(db, repo.as_deref())? {
            let facts = by_id.remove(&row.assignment.id);
            if let Some(Facts {
                presence: Presence::Absent,
                ..
            }) = &facts
            {
                // Verified absence: git's complete inventory has forgotten the checkout.
                self.retire(
                    &row,
                    "its checkout is gone (git no longer records it)",
                    db,
                    out,
                )?;
                continue;
            }
            let mut a: Assignment = self.assignment_record(&row);
            if let Some(f) = facts {
                if let Some((ahead, behind)) = f.ahead_behind {
                    a.ahead = Some(ahead as u32);
                    a.behind = Some(behind as u32);
                }
                a.usage = f.usage;
                if let Presence::Moved(moved) = &f.presence {
                    a.checkout_missing = Some(moved.to_string());
                }
            }
            let project = projects
                .entry(row.assignment.repo_id.clone())
                .or_insert_with(|| Project {
                    repo_id: row.assignment.repo_id.clone(),
                    project: row.assignment.project.clone(),
                    primary: row.primary_root.clone(),
                    primary_branch: primaries
                        .get(Path::new(&row.primary_root))
                        .cloned()
                        .flatten(),
                    manager: None,
                    assignments: Vec::new(),
                    host: None,
                });
            project.assignments.push(a);
        }
        // `all`: the retired work after the open (its checkout is gone: no git to read).
        let retired = match all {
            true => store::projects::list_retired(db, repo.as_deref(), RETIRED_LISTED)?,
            false => Vec::new(),
        };
        for row in retired {
            let a = self.assignment_record(&row);
            projects
                .entry(row.assignment.repo_id.clone())
                .or_insert_with(|| Project {
                    repo_id: row.assignment.repo_id.clone(),
                    project: row.assignment.project.clone(),
                    primary: row.primary_root.clone(),
                    primary_branch: None,
                    manager: None,
                    assignments: Vec::new(),
                    host: None,
                })
                .assignments
                .push(a);
        }
        for project in projects.values_mut() {
            project.manager =
                store::leases::get(db, Role::Manager, Some(&project.repo_id))?.map(|mut l| {
                    l.connected = self.presence.is_live(&l.session_id);
                    l
                });
        }
        let mut projects: Vec<Project> = projects.into_values().collect();
        projects.sort_by(|a, b| a.project.cmp(&b.project).then(a.repo_id.cmp(&b.repo_id)));
        out.send(
            cx.conn,
            &ServerMsg::Projects {
                id: cx.id,
                projects,
            },
        );
        Ok(())
    }

    /// Answer `list_staff` once git has said how far each assignment's branch is ahead
    /// of and behind its primary branch.
    pub(in crate::hub) fn staff_with_git(
        &mut self,
        cx: Cx,
        members: Vec<crate::protocol::StaffMember>,
        mut assignments: Vec<Assignment>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let mut wanted = Vec::with_capacity(assignments.len());
        for a in &assignments {
            let primary = store::projects::get(db, a.id)?.map(|r| PathBuf::from(r.primary_root));
            wanted.push((primary, a.branch.clone()));
        }
        let job: GitJob = Box::new(move || {
            for (a, (primary, branch)) in assignments.iter_mut().zip(wanted) {
                if let Some((ahead, behind)) =
                    primary.and_then(|p| worktrees::ahead_behind(&p, &branch).ok())
                {
                    a.ahead = Some(ahead as u32);
                    a.behind = Some(behind as u32);
                }
            }
            GitDone {
                reply: Some((cx.conn, cx.id)),
                then: Box::new(move |_state, _db, out| {
                    out.send(
                        cx.conn,
                        &ServerMsg::Staff {
                            id: cx.id,
                            members,
                            assignments,
                        },
                    );
                    Ok(())
                }),
            }
        });
        out.git.push(job);
        Ok(())
    }

    /// The assignments `list_staff` shows: a Manager's repository's, or all (human).
    pub(in crate::hub) fn staff_assignments(
        &self,
        manager_repo: Option<&str>,
        db: &Connection,
    ) -> HubResult<Vec<Assignment>> {
        Ok(store::projects::list_open(db, manager_repo)?
            .iter()
            .map(|row| self.assignment_record(row))
            .collect())
    }
}

/// What git says of one assignment (its usage is read after, off the lane).
fn read_facts(primary: &Path, checkout: &Path, branch: &str) -> Facts {
    Facts {
        presence: worktrees::checkout_presence_of(primary, checkout, Some(branch)),
        ahead_behind: worktrees::ahead_behind(primary, branch).ok(),
        usage: None,
    }
}
