// Roles against a fake Pi and a fake set_role: the role entry read back from the session file,
// each role's tool set (a Lead never has staff tools; a Manager and a Chief lose the writing
// tools and keep their read-only ones), the exact Lead list restored on leave, the role claimed
// again on registration (and, when the core refuses, the session a Lead again and told by
// whom), the footer, and the commands' answers, refusals shown as the core said them.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { CoreError, NotConnectedError } from "../client.ts";
import {
  heldRole,
  LEAD_TOOLS,
  latestRoleEntry,
  leadTools,
  ROLE_ENTRY,
  ROLE_TOOLS,
  roleFooter,
  roleLabel,
  Roles,
  roleTools,
  STAFF_TOOLS,
  type HeldRole,
  type RoleEntry,
  type RolesHost,
} from "../roles.ts";
import type { SessionInfo } from "../wire.ts";
import { sessionInfo } from "./fake-core.ts";

const LEAD = ["read", "bash", "edit", "write", "grep", "ask_human", "report", ...LEAD_TOOLS];

function session(role: SessionInfo["role"], project: string | null = "app"): SessionInfo {
  return { ...sessionInfo("s-1", "app-mgr"), role, project, repo_id: project === null ? null : `/src/${project}/.git` };
}

/** A stand-in for Pi and the core's set_role. */
class FakeHost implements RolesHost {
  active: string[];
  entries_: unknown[] = [];
  footers: Array<string | null> = [];
  notices: Array<{ text: string; level: string }> = [];
  requests: HeldRole[] = [];
  /** Which of `requests` were reclaims. */
  reclaims: boolean[] = [];
  /** What set_role answers: a role granted, or an error thrown. */
  answer: (role: HeldRole) => SessionInfo = (role) => session(role);
  isSupervising = false;

  constructor(active: string[] = [...LEAD]) {
    this.active = active;
  }
  entries(): readonly unknown[] {
    return this.entries_;
  }
  appendEntry(customType: string, data: RoleEntry): void {
    this.entries_.push({ type: "custom", customType, data: structuredClone(data) });
  }
  activeTools(): string[] {
    return [...this.active];
  }
  setActiveTools(names: string[]): void {
    this.active = [...names];
  }
  setFooter(text: string | null): void {
    this.footers.push(text);
  }
  async setRole(role: HeldRole, reclaim?: boolean): Promise<SessionInfo> {
    this.requests.push(role);
    this.reclaims.push(reclaim === true);
    return this.answer(role);
  }
  supervising(): boolean {
    return this.isSupervising;
  }
  notify(text: string, level: "info" | "warning"): void {
    this.notices.push({ text, level });
  }
  log(): void {}
  entry(): RoleEntry | null {
    return latestRoleEntry(this.entries_);
  }
}

const HELD: CoreError = new CoreError(
  "role_refused",
  "other-mgr (s-2) is the manager of app and is connected; one session holds it at a time",
  { reason: "held", holder: { id: "s-2", name: "other-mgr" } },
);

describe("role entries", () => {
  test("the newest valid entry wins; malformed ones are skipped", () => {
    const entries: unknown[] = [
      { type: "custom", customType: ROLE_ENTRY, data: { role: "manager", leadTools: ["read", "bash"] } },
      { type: "custom", customType: "other", data: { role: "lead", leadTools: null } },
      { type: "custom", customType: ROLE_ENTRY, data: { role: "boss", leadTools: null } },
      { type: "custom", customType: ROLE_ENTRY, data: { role: "chief", leadTools: [1, 2] } },
      { type: "message", customType: ROLE_ENTRY, data: { role: "lead", leadTools: null } },
    ];
    assert.deepEqual(latestRoleEntry(entries), { role: "manager", leadTools: ["read", "bash"] });
    entries.push({ type: "custom", customType: ROLE_ENTRY, data: { role: "lead", leadTools: null } });
    assert.deepEqual(latestRoleEntry(entries), { role: "lead", leadTools: null });
    assert.equal(latestRoleEntry([]), null);
  });

  test("supervisor is a Lead's hint; labels and footers name the repository", () => {
    assert.equal(heldRole("supervisor"), "lead");
    assert.equal(heldRole("chief"), "chief");
    assert.equal(roleLabel("manager", "app"), "manager of app");
    assert.equal(roleLabel("chief", null), "chief");
    assert.equal(roleFooter("manager", "app"), "manager · app");
    assert.equal(roleFooter("chief", null), "chief");
    assert.equal(roleFooter("lead", "app"), null);
  });
});

describe("tool sets per role", () => {
  test("a Manager: its role's tools and the read-only ones it had, no writing tools", () => {
    const tools = roleTools("manager", LEAD);
    assert.deepEqual(tools, ["read", "grep", ...ROLE_TOOLS.manager]);
    for (const t of [...STAFF_TOOLS, ...LEAD_TOOLS, "ask_human", "report"]) assert.ok(tools.includes(t), t);
    for (const t of ["bash", "edit", "write"]) assert.ok(!tools.includes(t), t);
  });

  test("the Chief: staff tools, the human, read-only; no supervisor or peer tools", () => {
    const tools = roleTools("chief", LEAD);
    for (const t of [...STAFF_TOOLS, "ask_human", "report", "read", "grep"]) assert.ok(tools.includes(t), t);
    for (const t of [...LEAD_TOOLS, "bash", "edit", "write"]) assert.ok(!tools.includes(t), t);
  });

  test("a Lead never has a staff tool", () => {
    assert.deepEqual(leadTools([...LEAD, ...STAFF_TOOLS]), LEAD);
  });
});

describe("Roles", () => {
  test("a fresh session: staff tools made inactive, no footer, nothing claimed", async () => {
    const host = new FakeHost([...LEAD, "list_staff"]);
    const roles = new Roles(host);
    roles.start();
    assert.deepEqual(host.active, LEAD);
    assert.deepEqual(host.footers, [null]);
    await roles.registered(session("lead"));
    assert.deepEqual(host.requests, []);
    assert.equal(roles.role, "lead");
    assert.equal(host.entry(), null);
  });

  test("/manager: granted, tools swapped, entry saved; /manager leave restores the exact list", async () => {
    const host = new FakeHost();
    const roles = new Roles(host);
    roles.start();
    await roles.registered(session("lead"));
    const out = await roles.command("manager", false);
    assert.equal(out.level, "info");
    assert.match(out.text, /now the manager of app/);
    assert.deepEqual(host.requests, ["manager"]);
    assert.deepEqual(host.active, roleTools("manager", LEAD));
    assert.deepEqual(host.entry(), { role: "manager", leadTools: LEAD });
    assert.equal(host.footers.at(-1), "manager · app");

    const left = await roles.command("manager", true);
    assert.match(left.text, /left the manager of app role/);
    assert.deepEqual(host.requests, ["manager", "lead"]);
    assert.deepEqual(host.active, LEAD);
    assert.deepEqual(host.entry(), { role: "lead", leadTools: null });
    assert.equal(host.footers.at(-1), null);
  });

  test("a refusal is shown as the core said it, and nothing changes", async () => {
    const host = new FakeHost();
    host.answer = () => {
      throw new CoreError("role_refused", "/src/app-feature is a linked worktree of app; /manager runs in the repository's primary worktree", {
        reason: "linked_worktree",
      });
    };
    const roles = new Roles(host);
    roles.start();
    const out = await roles.command("manager", false);
    assert.deepEqual(out, {
      text: "shepherd: /src/app-feature is a linked worktree of app; /manager runs in the repository's primary worktree",
      level: "warning",
    });
    assert.deepEqual(host.active, LEAD);
    assert.equal(host.entry(), null);
    assert.equal(roles.role, "lead");
  });

  test("not connected: the command says the core grants roles; leaving a role not held is refused locally", async () => {
    const host = new FakeHost();
    host.answer = () => {
      throw new NotConnectedError("not connected to the shepherd core at /x (waiting)");
    };
    const roles = new Roles(host);
    roles.start();
    assert.match((await roles.command("chief", false)).text, /not connected to the shepherd core, which grants roles/);
    const leave = await roles.command("chief", true);
    assert.match(leave.text, /not the chief; nothing to leave/);
    assert.deepEqual(host.requests, ["chief"]);
  });

  test("a supervising session takes no role", async () => {
    const host = new FakeHost();
    host.isSupervising = true;
    const roles = new Roles(host);
    roles.start();
    assert.match((await roles.command("manager", false)).text, /\/supervise stop/);
    assert.deepEqual(host.requests, []);
  });

  test("after a reload or resume: role tools at once, claimed again on registration, leave still restores", async () => {
    const host = new FakeHost();
    host.entries_.push({ type: "custom", customType: ROLE_ENTRY, data: { role: "manager", leadTools: LEAD } });
    const roles = new Roles(host);
    roles.start();
    assert.deepEqual(host.active, roleTools("manager", LEAD));
    // The core restarted and forgot nothing, or the lease was released: claim it again.
    await roles.registered(session("lead"));
    assert.deepEqual(host.requests, ["manager"]);
    assert.deepEqual(host.reclaims, [true], "asked as a reclaim, which the core refuses after a release");
    assert.equal(roles.role, "manager");
    assert.equal(host.entries_.length, 1, "the entry still holds the Lead's list");
    // Already the Manager on the core: nothing to ask.
    await roles.registered(session("manager"));
    assert.deepEqual(host.requests, ["manager"]);
    await roles.command("manager", true);
    assert.deepEqual(host.active, LEAD);
    assert.deepEqual(host.reclaims, [true, false], "a command is no reclaim");
  });

  test("closing the session gives Pi back the Lead's tools and records nothing (a /new starts clean)", async () => {
    const host = new FakeHost();
    const roles = new Roles(host);
    roles.start();
    await roles.command("chief", false);
    assert.deepEqual(host.active, roleTools("chief", LEAD));
    const entries = host.entries_.length;
    roles.stop();
    assert.deepEqual(host.active, LEAD);
    assert.equal(host.entries_.length, entries);
    assert.deepEqual(host.entry(), { role: "chief", leadTools: LEAD });
    // The same session started again (a reload): the role's tools at once.
    const again = new Roles(host);
    again.start();
    assert.deepEqual(host.active, roleTools("chief", LEAD));
  });

  test("the lease was taken meanwhile: a Lead again, told by whom, entry updated", async () => {
    const host = new FakeHost();
    host.entries_.push({ type: "custom", customType: ROLE_ENTRY, data: { role: "manager", leadTools: LEAD } });
    host.answer = () => {
      throw HELD;
    };
    const roles = new Roles(host);
    roles.start();
    await roles.registered(session("lead"));
    assert.equal(roles.role, "lead");
    assert.deepEqual(host.active, LEAD);
    assert.deepEqual(host.entry(), { role: "lead", leadTools: null });
    assert.equal(host.notices.length, 1);
    assert.equal(host.notices[0]?.level, "warning");
    assert.match(host.notices[0]?.text ?? "", /no longer the manager of app: other-mgr \(s-2\) is the manager of app/);
    assert.equal(host.footers.at(-1), null);
  });

  test("claiming again while the core is away waits for the next registration", async () => {
    const host = new FakeHost();
    host.entries_.push({ type: "custom", customType: ROLE_ENTRY, data: { role: "chief", leadTools: LEAD } });
    host.answer = () => {
      throw new NotConnectedError("the connection to the shepherd core closed");
    };
    const roles = new Roles(host);
    roles.start();
    await roles.registered(session("lead", null));
    assert.equal(roles.role, "chief");
    assert.deepEqual(host.active, roleTools("chief", LEAD));
    assert.deepEqual(host.notices, []);
    host.answer = (role) => session(role, null);
    await roles.registered(session("lead", null));
    assert.equal(roles.role, "chief");
    assert.equal(host.footers.at(-1), "chief");
  });

  test("a grant whose answer was lost is adopted from the registration", async () => {
    const host = new FakeHost();
    const roles = new Roles(host);
    roles.start();
    await roles.registered(session("manager"));
    assert.equal(roles.role, "manager");
    assert.deepEqual(host.active, roleTools("manager", LEAD));
    assert.deepEqual(host.entry(), { role: "manager", leadTools: LEAD });
    assert.deepEqual(host.requests, []);
  });
});
