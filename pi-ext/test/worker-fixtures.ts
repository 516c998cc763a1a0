// The golden fixtures' worker and assignment records, for the worker and project tests.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { decodeServerMsg, type Assignment, type Worker } from "../wire.ts";

const fixtures = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "tests", "fixtures", "protocol");

/** The text of one golden fixture. */
export function fixture(side: "client" | "server", name: string): string {
  return readFileSync(join(fixtures, side, `${name}.json`), "utf8");
}

/** The worker record of the golden fixtures (server/worker.json), with overrides. */
export function workerRecord(overrides: Partial<Worker> = {}): Worker {
  const msg = decodeServerMsg(fixture("server", "worker"));
  assert.ok(msg.type === "worker");
  return { ...msg.worker, ...overrides };
}

/** The assignment of the golden fixtures (server/assignment.json), with overrides. */
export function assignmentRecord(overrides: Partial<Assignment> = {}): Assignment {
  const msg = decodeServerMsg(fixture("server", "assignment"));
  assert.ok(msg.type === "assignment");
  return { ...msg.assignment, ...overrides };
}
