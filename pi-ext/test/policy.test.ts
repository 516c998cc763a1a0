// Policy lookup order (<cwd>/.pi/SUPERVISOR.md, then <agent dir>/SUPERVISOR.md, then the
// built-in policy) and the brief the extension injects, against a fake file system and a
// real temporary directory.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { BUILTIN_POLICY, briefText, loadPolicy, MAX_POLICY_BYTES, policyCandidates } from "../policy.ts";
import { pairing } from "./pairings.ts";

test("the project's policy wins over the agent dir's, which wins over the built-in one", () => {
  const files = new Map<string, string>([
    ["/src/app/.pi/SUPERVISOR.md", "project policy"],
    ["/home/ada/.pi/agent/SUPERVISOR.md", "personal policy"],
  ]);
  const read = (p: string): string | null => files.get(p) ?? null;
  assert.deepEqual(loadPolicy("/src/app", "/home/ada/.pi/agent", read), { text: "project policy", source: "/src/app/.pi/SUPERVISOR.md" });
  files.delete("/src/app/.pi/SUPERVISOR.md");
  assert.deepEqual(loadPolicy("/src/app", "/home/ada/.pi/agent", read), { text: "personal policy", source: "/home/ada/.pi/agent/SUPERVISOR.md" });
  files.set("/home/ada/.pi/agent/SUPERVISOR.md", "  \n");
  assert.deepEqual(loadPolicy("/src/app", "/home/ada/.pi/agent", read), { text: BUILTIN_POLICY, source: "built-in" });
});

test("real files: read from disk, a huge one is cut", () => {
  const dir = mkdtempSync(join(tmpdir(), "shepherd-policy-"));
  try {
    const cwd = join(dir, "proj");
    const agent = join(dir, "agent");
    mkdirSync(join(cwd, ".pi"), { recursive: true });
    mkdirSync(agent, { recursive: true });
    assert.deepEqual(policyCandidates(cwd, agent), [join(cwd, ".pi", "SUPERVISOR.md"), join(agent, "SUPERVISOR.md")]);
    assert.equal(loadPolicy(cwd, agent).source, "built-in");
    writeFileSync(join(agent, "SUPERVISOR.md"), "Be terse.\n");
    assert.deepEqual(loadPolicy(cwd, agent), { text: "Be terse.", source: join(agent, "SUPERVISOR.md") });
    writeFileSync(join(cwd, ".pi", "SUPERVISOR.md"), "x".repeat(MAX_POLICY_BYTES + 10));
    const big = loadPolicy(cwd, agent);
    assert.equal(big.source, join(cwd, ".pi", "SUPERVISOR.md"));
    assert.match(big.text, /cut at 65536 bytes/);
    assert.ok(big.text.length < MAX_POLICY_BYTES + 100);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the built-in policy says how to answer a look", () => {
  for (const needle of ["exactly ONE verdict tool", "steer", "let_it_run", "done", "evidence", "Never write code", '"?"']) {
    assert.ok(BUILTIN_POLICY.includes(needle), needle);
  }
});

test("the brief names the worker, the goal and its file, and the policy's source", () => {
  const p = pairing({ goal: "SSO works; tests pass.", goal_file: "/src/app/GOAL.md" });
  const text = briefText(p, { text: "Be terse.", source: "/src/app/.pi/SUPERVISOR.md" }, false);
  assert.match(text, /You now supervise session "fix-login" \(0193a5c2\) in \/home\/ada\/src\/app \(pairing 7\)/);
  assert.match(text, /## Goal\nSSO works; tests pass.\n\(read from \/src\/app\/GOAL.md\)/);
  assert.match(text, /## Policy \(\/src\/app\/.pi\/SUPERVISOR.md\)\nBe terse./);
  const again = briefText(pairing({ goal: null }), { text: "p", source: "built-in" }, true);
  assert.match(again, /still supervising session "fix-login"/);
  assert.match(again, /none yet: steer is refused/);
});
