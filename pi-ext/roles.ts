// This session's role (Lead, Manager or Chief) and what follows from it in Pi. The core grants
// roles (set_role, from durable leases); this module asks for them, follows what the core says
// and applies it to the session: a Manager or the Chief gets its role's tools instead of the
// writing tools (the staff tools, a Manager also the project tools, and the read-only tools it
// had), a Lead never sees the staff or project tools, and leaving restores the exact tool list
// from before. The role and that list live in the session file (pi.appendEntry, customType
// "shepherd-role", {role, leadTools}), so a /reload, a resume or a core restart claims the
// role again; if the core refuses (another session took the lease meanwhile) the session stays
// a Lead, is told by whom, and the entry says lead again. The footer shows the role
// (`manager · app`). Pi-free: session.ts supplies a RolesHost over the real ExtensionAPI and
// CoreClient, tests a fake.

import { CoreError, NotConnectedError } from "./client.ts";
import { READ_ONLY_TOOLS } from "./toolset.ts";
import { OWNER_TOOLS } from "./workers.ts";
import type { Role, SessionInfo } from "./wire.ts";

/** customType of the pi.appendEntry records of this session's role. */
export const ROLE_ENTRY = "shepherd-role";
/** Key of the footer status this module owns. */
export const ROLE_STATUS_KEY = "shepherd-role";

/** A role the core grants, or `lead` (the `supervisor` hint counts as a Lead). */
export type HeldRole = "lead" | "manager" | "chief";
export type StaffRole = Exclude<HeldRole, "lead">;

/** What one role entry holds: the role, and (in a role) the Lead's tool list to restore. */
export interface RoleEntry {
  role: HeldRole;
  leadTools: string[] | null;
}

/** A Lead's edge tools (active by default; a Chief loses them). */
export const LEAD_TOOLS: readonly string[] = ["message_supervisor", "ask_supervisor", "list_peers", "message_peer"];
/** Tools only a Manager or the Chief has: registered inactive, never active for a Lead. */
export const STAFF_TOOLS: readonly string[] = ["list_staff", "inspect_staff", "message_staff", "answer_staff"];
/**
 * Project work: only a Manager has these (its repository's work assignments); registered
 * inactive, never active for a Lead or the Chief.
 */
export const MANAGER_TOOLS: readonly string[] = ["delegate_project", "resume_work", "stop_lead", "integrate_branch"];
/** The human stays reachable directly from every role. */
const HUMAN_TOOLS: readonly string[] = ["ask_human", "report"];

/**
 * Each granted role's tools, besides the read-only tools it had as a Lead. Every role may own
 * managed workers, so each keeps the owner tools (workers.ts).
 */
export const ROLE_TOOLS: Readonly<Record<StaffRole, readonly string[]>> = {
  manager: [
    "message_supervisor",
    "ask_supervisor",
    ...STAFF_TOOLS,
    ...MANAGER_TOOLS,
    "list_peers",
    "message_peer",
    ...HUMAN_TOOLS,
    ...OWNER_TOOLS,
  ],
  chief: [...STAFF_TOOLS, ...HUMAN_TOOLS, ...OWNER_TOOLS],
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isHeldRole(value: unknown): value is HeldRole {
  return value === "lead" || value === "manager" || value === "chief";
}

function roleEntryOf(entry: unknown): RoleEntry | null {
  if (!isRecord(entry) || entry["type"] !== "custom" || entry["customType"] !== ROLE_ENTRY) return null;
  const data = entry["data"];
  if (!isRecord(data) || !isHeldRole(data["role"])) return null;
  const tools = data["leadTools"];
  if (tools === null || tools === undefined) return { role: data["role"], leadTools: null };
  if (!Array.isArray(tools) || !tools.every((n): n is string => typeof n === "string")) return null;
  return { role: data["role"], leadTools: tools };
}

/** The newest role entry among session entries (null: this session never held a role). */
export function latestRoleEntry(entries: readonly unknown[]): RoleEntry | null {
  for (let i = entries.length - 1; i >= 0; i--) {
    const found = roleEntryOf(entries[i]);
    if (found !== null) return found;
  }
  return null;
}

/** The role as this module holds it: `supervisor` (a Lead's hint) is a Lead. */
export function heldRole(role: Role): HeldRole {
  return role === "manager" || role === "chief" ? role : "lead";
}

/** The active tools in `role`, from the Lead's list: its read-only tools and the role's. */
export function roleTools(role: StaffRole, leadTools: readonly string[]): string[] {
  const keep = leadTools.filter((name) => READ_ONLY_TOOLS.includes(name));
  return [...new Set([...keep, ...ROLE_TOOLS[role]])];
}

/** A Lead's active tools: whatever it has, never a staff or Manager tool. */
export function leadTools(active: readonly string[]): string[] {
  return active.filter((name) => !STAFF_TOOLS.includes(name) && !MANAGER_TOOLS.includes(name));
}

/** How the role is named to people: `manager of app`, `chief`, `lead`. */
export function roleLabel(role: HeldRole, project: string | null): string {
  return role === "manager" && project !== null ? `manager of ${project}` : role;
}

/** The footer: `manager · app`, `chief`; nothing for a Lead. */
export function roleFooter(role: HeldRole, project: string | null): string | null {
  if (role === "lead") return null;
  return role === "manager" && project !== null ? `manager · ${project}` : role;
}

function sameTools(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name, i) => name === b[i]);
}

/** The Pi and core side of roles. */
export interface RolesHost {
  /** ctx.sessionManager.getEntries(). */
  entries(): readonly unknown[];
  /** pi.appendEntry(ROLE_ENTRY, data). */
  appendEntry(customType: string, data: RoleEntry): void;
  /** pi.getActiveTools(). */
  activeTools(): string[];
  /** pi.setActiveTools(). */
  setActiveTools(names: string[]): void;
  /** ctx.ui.setStatus(ROLE_STATUS_KEY, text); null clears it. */
  setFooter(text: string | null): void;
  /**
   * The core's `set_role`: the session as it is now. Throws CoreError / NotConnectedError.
   * `reclaim`: the role the session file says this session held, asked for again.
   */
  setRole(role: HeldRole, reclaim?: boolean): Promise<SessionInfo>;
  /** Whether this session supervises a worker now (a role is not taken then). */
  supervising(): boolean;
  notify(text: string, level: "info" | "warning"): void;
  log(line: string): void;
}

/** What a /manager or /chief command says. */
export interface CommandOutcome {
  text: string;
  level: "info" | "warning";
}

export class Roles {
  readonly #host: RolesHost;
  #role: HeldRole = "lead";
  #project: string | null = null;

  constructor(host: RolesHost) {
    this.#host = host;
  }

  get role(): HeldRole {
    return this.#role;
  }

  get project(): string | null {
    return this.#project;
  }

  /** `manager of app`, `chief`, `lead`. */
  get label(): string {
    return roleLabel(this.#role, this.#project);
  }

  /**
   * At session start: a role entry means the session held a role when it stopped, so it has
   * that role's tools until the core says otherwise (registered() claims it again); without
   * one the staff tools are made inactive.
   */
  start(): void {
    const entry = latestRoleEntry(this.#host.entries());
    if (entry !== null && entry.role !== "lead") {
      this.#role = entry.role;
      this.#apply(roleTools(entry.role, entry.leadTools ?? this.#host.activeTools()));
      this.#host.log(`roles: resuming as ${entry.role}; claiming it again once registered`);
    } else {
      this.#apply(leadTools(this.#host.activeTools()));
    }
    this.#footer();
  }

  /**
   * Pi is closing this session (/new, /resume of another, /reload, quit): give Pi back the
   * Lead's tools without recording anything, so a session that starts next in this process
   * does not inherit this role's tools; the entry keeps the role, and the session's next
   * start (a reload or a resume) takes the role's tools again.
   */
  stop(): void {
    if (this.#role === "lead") return;
    const saved = latestRoleEntry(this.#host.entries())?.leadTools ?? null;
    if (saved !== null) this.#apply(saved);
  }

  /**
   * Registered (again) with the core, which says which role the session holds. A role the
   * session file says it had and the core does not is claimed again; a refusal (the lease
   * was taken meanwhile) leaves it a Lead and says by whom. Otherwise the core's word
   * stands (a grant whose answer was lost is adopted).
   */
  async registered(session: SessionInfo): Promise<void> {
    const wanted = latestRoleEntry(this.#host.entries())?.role ?? "lead";
    const core = heldRole(session.role);
    this.#project = session.project;
    if (wanted === "lead" || core === wanted) {
      this.#became(session);
      return;
    }
    try {
      this.#became(await this.#host.setRole(wanted, true));
      this.#host.log(`roles: ${wanted} claimed again`);
    } catch (e) {
      if (e instanceof CoreError) {
        this.#became(session);
        this.#host.notify(
          `shepherd: this session is no longer the ${roleLabel(wanted, this.#project)}: ${e.coreMessage} It is a Lead now, with its previous tools.`,
          "warning",
        );
        return;
      }
      // Not connected after all: the next registration claims it.
      this.#host.log(`roles: claiming ${wanted} again failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /** `/manager`, `/chief` (take the role) and `/manager leave`, `/chief leave`. */
  async command(role: StaffRole, leave: boolean): Promise<CommandOutcome> {
    if (leave) {
      if (this.#role !== role) {
        const other = this.#role === "lead" ? "" : ` (it is the ${this.label}: /${this.#role} leave)`;
        return { text: `shepherd: this session is not the ${role}${other}; nothing to leave`, level: "warning" };
      }
      const before = this.label;
      return this.#ask("lead", (s) => {
        this.#became(s);
        return `shepherd: left the ${before} role; this session is a Lead again, with its previous tools`;
      });
    }
    if (this.#host.supervising()) {
      return { text: `shepherd: this session supervises a worker; end that first (/supervise stop), then /${role}`, level: "warning" };
    }
    return this.#ask(role, (s) => {
      this.#became(s);
      if (heldRole(s.role) !== role) return `shepherd: the core left this session a ${heldRole(s.role)}`;
      const staff = role === "manager" ? "the Leads in this repository's worktrees" : "the Managers, and the Leads with no Manager";
      return `shepherd: this session is now the ${this.label}; its staff are ${staff} (list_staff). Writing tools are off until /${role} leave.`;
    });
  }

  async #ask(role: HeldRole, done: (s: SessionInfo) => string): Promise<CommandOutcome> {
    try {
      return { text: done(await this.#host.setRole(role)), level: "info" };
    } catch (e) {
      if (e instanceof CoreError) return { text: `shepherd: ${e.coreMessage}`, level: "warning" };
      if (e instanceof NotConnectedError) {
        return { text: `shepherd: not connected to the shepherd core, which grants roles; try again when it is back (${e.message})`, level: "warning" };
      }
      throw e;
    }
  }

  /** Apply the role the core says this session holds. */
  #became(session: SessionInfo): void {
    const role = heldRole(session.role);
    this.#project = session.project;
    const entry = latestRoleEntry(this.#host.entries());
    const saved = entry !== null && entry.role !== "lead" ? entry.leadTools : null;
    if (role === "lead") {
      if (this.#role !== "lead" || (entry !== null && entry.role !== "lead")) {
        const restored = saved ?? leadTools(this.#host.activeTools());
        this.#apply(restored);
        this.#host.appendEntry(ROLE_ENTRY, { role: "lead", leadTools: null });
        this.#host.log(`roles: lead again, tools restored`);
      }
      this.#role = "lead";
    } else {
      const before = saved ?? this.#host.activeTools();
      this.#apply(roleTools(role, before));
      if (entry === null || entry.role !== role || entry.leadTools === null) {
        this.#host.appendEntry(ROLE_ENTRY, { role, leadTools: [...before] });
      }
      this.#role = role;
    }
    this.#footer();
  }

  #apply(names: string[]): void {
    if (sameTools(names, this.#host.activeTools())) return;
    this.#host.setActiveTools(names);
  }

  #footer(): void {
    this.#host.setFooter(roleFooter(this.#role, this.#project));
  }
}
