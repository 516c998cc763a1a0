// The /supervise grammar: subcommands only when they are the whole argument (a goal may start
// with "stop"), @target with or without a goal, goal paths passed through for the core.

import assert from "node:assert/strict";
import { test } from "node:test";

import { parseSuperviseArgs } from "../supervise-args.ts";

test("no arguments: pair with the one free session here, no goal", () => {
  assert.deepEqual(parseSuperviseArgs(""), { kind: "start" });
  assert.deepEqual(parseSuperviseArgs("   "), { kind: "start" });
});

test("@target, with and without a goal", () => {
  assert.deepEqual(parseSuperviseArgs("@fix-login"), { kind: "start", worker: "fix-login" });
  assert.deepEqual(parseSuperviseArgs("@0193a5c2 make SSO work; tests pass"), {
    kind: "start",
    worker: "0193a5c2",
    goal: "make SSO work; tests pass",
  });
  assert.deepEqual(parseSuperviseArgs("@fix-login docs/GOAL.md"), { kind: "start", worker: "fix-login", goal: "docs/GOAL.md" });
  assert.equal(parseSuperviseArgs("@ goal").kind, "invalid");
});

test("a goal or a goal file without a target, kept verbatim", () => {
  assert.deepEqual(parseSuperviseArgs("docs/GOAL.md"), { kind: "start", goal: "docs/GOAL.md" });
  assert.deepEqual(parseSuperviseArgs("  The login form accepts SSO users.  "), { kind: "start", goal: "The login form accepts SSO users." });
  assert.deepEqual(parseSuperviseArgs("stop the flaky tests from failing"), { kind: "start", goal: "stop the flaky tests from failing" });
  assert.deepEqual(parseSuperviseArgs("look at the README first"), { kind: "start", goal: "look at the README first" });
});

test("subcommands", () => {
  assert.deepEqual(parseSuperviseArgs("stop"), { kind: "stop" });
  assert.deepEqual(parseSuperviseArgs(" Status "), { kind: "status" });
  assert.deepEqual(parseSuperviseArgs("look"), { kind: "look" });
  assert.deepEqual(parseSuperviseArgs("help"), { kind: "help" });
  assert.deepEqual(parseSuperviseArgs("goal Also keep the old password flow."), { kind: "goal", goal: "Also keep the old password flow." });
  assert.deepEqual(parseSuperviseArgs("goal GOAL.md"), { kind: "goal", goal: "GOAL.md" });
  assert.equal(parseSuperviseArgs("goal").kind, "invalid");
  assert.equal(parseSuperviseArgs("goal   ").kind, "invalid");
});
