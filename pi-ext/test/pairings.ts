// Pairing records for the supervision tests, shaped like tests/fixtures/protocol/server/paired.json.

import type { EndReason, Pairing } from "../wire.ts";

export const SUPERVISOR_ID = "0193a5c2-aaaa-7b8a-9c3f-1e2d3c4b5a01";
export const WORKER_ID = "0193a5c2-7d1e-7b8a-9c3f-1e2d3c4b5a69";

export function pairing(overrides: Partial<Pairing> = {}): Pairing {
  return {
    id: 7,
    supervisor_id: SUPERVISOR_ID,
    supervisor_name: "watch-login",
    worker_id: WORKER_ID,
    worker_name: "fix-login",
    cwd: "/home/ada/src/app",
    goal: "The login form accepts SSO users; tests pass.",
    goal_file: null,
    state: "active",
    looks: 0,
    steers: 0,
    created_at: 1_764_669_600_000,
    last_look_at: null,
    ended_at: null,
    end_reason: null,
    ended_by: null,
    evidence: null,
    supervisor_connected: true,
    worker_connected: true,
    ...overrides,
  };
}

export function ended(p: Pairing, reason: EndReason, by: string, evidence: string | null = null): Pairing {
  return { ...p, state: "ended", ended_at: p.created_at + 1000, end_reason: reason, ended_by: by, evidence };
}
