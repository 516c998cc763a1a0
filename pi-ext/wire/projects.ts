// Project work on the wire (core/src/protocol/projects.rs): a Manager's work assignments (a
// branch-sized objective a Lead carries out in its own linked worktree), the projects they
// group into, what an integration did, the project requests a Pi session (a Manager) sends
// and their replies and events, with the checked decoders of each. wire/messages.ts and
// wire/decode.ts join these into ClientMsg and ServerMsg; docs/PROTOCOL.md is the prose.

import { arrayOf, bool, maybeNull, nullable, oneOf, record, req, str, u32, u64, withDefault, type Conv } from "./fields.ts";
import type { Lease, UsageTotals } from "./records.ts";
import { lease, usageTotals } from "./shared.ts";
import { WORKER_BACKENDS, type WorkerBackend } from "./workers.ts";

/** Where an assignment stands: its Lead works on it, `stop_lead` paused it, or it is over. */
export type AssignmentState = "active" | "paused" | "retired";
export const ASSIGNMENT_STATES: readonly AssignmentState[] = ["active", "paused", "retired"];

/** Whether an assignment's Lead runs: launched and not registered yet, connected, or no process. */
export type LeadState = "starting" | "running" | "stopped";
export const LEAD_STATES: readonly LeadState[] = ["starting", "running", "stopped"];

/** How an `integrate_branch` ended (a refusal is an `error` with code `project_refused`). */
export type IntegrationStatus = "integrated" | "cleanup_pending" | "awaiting_approval";
export const INTEGRATION_STATUSES: readonly IntegrationStatus[] = ["integrated", "cleanup_pending", "awaiting_approval"];

/** A work assignment: one branch of one repository, carried out by one Lead session. */
export interface Assignment {
  id: number;
  /** The repository's identity (its canonical common git directory). */
  repo_id: string;
  /** The repository's name. */
  project: string;
  /** The branch it was created for; with repo_id, the handle. */
  branch: string;
  /** What the checkout has checked out now (null: detached, or not seen). */
  current_branch: string | null;
  /** The linked worktree the Lead works in. */
  checkout: string;
  /** The Lead's exact Pi session. */
  session_id: string;
  state: AssignmentState;
  lead: LeadState;
  backend: WorkerBackend;
  pid: number | null;
  /** The task's first 200 characters. */
  task: string;
  /** Who delegated it (the Manager's session name). */
  created_by: string;
  created_by_id: string | null;
  created_at: number;
  updated_at: number;
  /** The newest update's time and first 200 characters. */
  last_update_at: number | null;
  last_update: string | null;
  head: string | null;
  /** Commits on the branch not on the primary branch, and the reverse (null: git could not tell). */
  ahead: number | null;
  behind: number | null;
  open_asks: number;
  /** Tokens and cost of the Lead's tree, for listings. */
  usage: UsageTotals | null;
  integrated_sha: string | null;
  /** Integrated, but removing the checkout failed: the same integrate_branch finishes it. */
  cleanup_pending: boolean;
  /** Listings: git still records the checkout, but not at its path (moved, renamed or deleted by hand): what git records and how to repair it. */
  /** Absent when the checkout is where git records it. */
  checkout_missing?: string | null;
}

/** One repository with project work. */
export interface Project {
  repo_id: string;
  project: string;
  /** The primary worktree's root. */
  primary: string;
  primary_branch: string | null;
  manager: Lease | null;
  /** Its assignments that are not retired, oldest first. */
  assignments: Assignment[];
}

/** What an `integrate_branch` did. */
export interface Integration {
  status: IntegrationStatus;
  assignment: Assignment;
  primary_branch: string;
  sha: string;
  /** The approval ask the human answers (`awaiting_approval`). */
  ask_id: number | null;
  /** What happened, in a sentence for the model and the phone. */
  message: string;
}

export const assignmentRecord: Conv<Assignment> = record({
  id: req(u64),
  repo_id: req(str),
  project: req(str),
  branch: req(str),
  current_branch: nullable(str),
  checkout: req(str),
  session_id: req(str),
  state: req(oneOf(ASSIGNMENT_STATES)),
  lead: req(oneOf(LEAD_STATES)),
  backend: req(oneOf(WORKER_BACKENDS)),
  pid: nullable(u32),
  task: req(str),
  created_by: req(str),
  created_by_id: nullable(str),
  created_at: req(u64),
  updated_at: req(u64),
  last_update_at: nullable(u64),
  last_update: nullable(str),
  head: nullable(str),
  ahead: nullable(u32),
  behind: nullable(u32),
  open_asks: withDefault(u32, () => 0),
  usage: nullable(usageTotals),
  integrated_sha: nullable(str),
  cleanup_pending: withDefault(bool, () => false),
  checkout_missing: maybeNull(str),
});

export const projectRecord: Conv<Project> = record({
  repo_id: req(str),
  project: req(str),
  primary: req(str),
  primary_branch: nullable(str),
  manager: nullable(lease),
  assignments: req(arrayOf(assignmentRecord)),
});

export const integrationRecord: Conv<Integration> = record({
  status: req(oneOf(INTEGRATION_STATUSES)),
  assignment: req(assignmentRecord),
  primary_branch: req(str),
  sha: req(str),
  ask_id: nullable(u64),
  message: req(str),
});

// ---- requests (Pi, CLI, bridge → core) -----------------------------------------------------

/** A Manager only: a new branch + linked worktree + a Lead launched there on `task`; answered by `assignment`. */
export type DelegateProjectMsg = {
  type: "delegate_project";
  id: number;
  task: string;
  branch?: string | null;
  base?: string | null;
};
/** Relaunch an assignment's Lead (same session, same checkout); answered by `assignment`. */
export type ResumeWorkMsg = { type: "resume_work"; id: number; branch: string; repo?: string | null };
/** Stop an assignment's Lead and its workers; the assignment is `paused`. Answered by `assignment`. */
export type StopLeadMsg = { type: "stop_lead"; id: number; branch: string; repo?: string | null };
/** Fast-forward the primary branch to `sha` (the branch's tip); answered by `integration`. */
export type IntegrateBranchMsg = { type: "integrate_branch"; id: number; branch: string; sha: string; repo?: string | null };
/** Repositories with assignments (a Manager: its own); answered by `projects`. */
export type ListProjectsMsg = { type: "list_projects"; id: number };

export type ProjectClientMsg = DelegateProjectMsg | ResumeWorkMsg | StopLeadMsg | IntegrateBranchMsg | ListProjectsMsg;

export const PROJECT_CLIENT_TYPES: readonly ProjectClientMsg["type"][] = [
  "delegate_project",
  "resume_work",
  "stop_lead",
  "integrate_branch",
  "list_projects",
];

// ---- replies and events (core → client) ----------------------------------------------------

/** Reply to delegate_project, resume_work and stop_lead: the assignment as it is now. */
export type AssignmentMsg = { type: "assignment"; id: number; assignment: Assignment };
/** Reply to integrate_branch. */
export type IntegrationMsg = { type: "integration"; id: number; integration: Integration };
/** Reply to list_projects. */
export type ProjectsMsg = { type: "projects"; id: number; projects: Project[] };
/** Event to subscribers: an assignment was created or changed. */
export type AssignmentChangedMsg = { type: "assignment_changed"; assignment: Assignment };
/** Event to subscribers: an assigned Lead finished a turn (also mailed to the Manager role). */
export type AssignmentUpdateMsg = { type: "assignment_update"; assignment: Assignment; text: string; message_id: number };

export type ProjectServerMsg = AssignmentMsg | IntegrationMsg | ProjectsMsg | AssignmentChangedMsg | AssignmentUpdateMsg;

export const PROJECT_SERVER_TYPES: readonly ProjectServerMsg["type"][] = [
  "assignment",
  "integration",
  "projects",
  "assignment_changed",
  "assignment_update",
];

// ---- decoders of the message bodies (every field but `type`) -------------------------------

type Bodies<M extends { type: string }> = {
  readonly [T in M["type"]]: Conv<Omit<Extract<M, { type: T }>, "type">>;
};

export const PROJECT_CLIENT_BODIES: Bodies<ProjectClientMsg> = {
  delegate_project: record({ id: req(u64), task: req(str), branch: maybeNull(str), base: maybeNull(str) }),
  resume_work: record({ id: req(u64), branch: req(str), repo: maybeNull(str) }),
  stop_lead: record({ id: req(u64), branch: req(str), repo: maybeNull(str) }),
  integrate_branch: record({ id: req(u64), branch: req(str), sha: req(str), repo: maybeNull(str) }),
  list_projects: record({ id: req(u64) }),
};

export const PROJECT_SERVER_BODIES: Bodies<ProjectServerMsg> = {
  assignment: record({ id: req(u64), assignment: req(assignmentRecord) }),
  integration: record({ id: req(u64), integration: req(integrationRecord) }),
  projects: record({ id: req(u64), projects: req(arrayOf(projectRecord)) }),
  assignment_changed: record({ assignment: req(assignmentRecord) }),
  assignment_update: record({ assignment: req(assignmentRecord), text: req(str), message_id: req(u64) }),
};
