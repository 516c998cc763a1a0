// Which tools the model has while this session supervises, and how the tool set it had before
// comes back. Supervising removes every tool outside a read-only allowlist (bash, edit, write,
// ask_human, … go; read, grep, find, ls stay if they were active) and adds the five verdict
// tools; when the pairing ends the exact list from before is restored. That list is saved in
// the session file (pi.appendEntry, customType "shepherd-supervisor-tools") at the moment
// supervision starts, so a /reload, resume or crash in the middle of a pairing still restores
// it, and an entry with `saved: null` records that it was restored. Pure functions.

/** Tools a supervisor keeps, if they were active. */
export const READ_ONLY_TOOLS: readonly string[] = ["read", "grep", "find", "ls"];

/** The verdict tools: registered once, active only while supervising. */
export const SUPERVISOR_TOOLS: readonly string[] = ["worker_view", "set_goal", "steer", "let_it_run", "done"];

/** customType of the pi.appendEntry records of the saved tool list. */
export const SAVED_TOOLS_ENTRY = "shepherd-supervisor-tools";

/** What one saved-tools entry holds: the list to restore, or null once restored. */
export interface SavedTools {
  pairing_id: number;
  saved: string[] | null;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function savedToolsOf(entry: unknown): SavedTools | null {
  if (!isRecord(entry) || entry["type"] !== "custom" || entry["customType"] !== SAVED_TOOLS_ENTRY) return null;
  const data = entry["data"];
  if (!isRecord(data)) return null;
  const pairingId = data["pairing_id"];
  const saved = data["saved"];
  if (typeof pairingId !== "number") return null;
  if (saved === null) return { pairing_id: pairingId, saved: null };
  if (!Array.isArray(saved) || !saved.every((n): n is string => typeof n === "string")) return null;
  return { pairing_id: pairingId, saved };
}

/** The newest saved-tools record among session entries (null: none was ever written). */
export function latestSavedTools(entries: readonly unknown[]): SavedTools | null {
  for (let i = entries.length - 1; i >= 0; i--) {
    const found = savedToolsOf(entries[i]);
    if (found !== null) return found;
  }
  return null;
}

/** The active tools while supervising, from the list that was active before. */
export function supervisingTools(before: readonly string[]): string[] {
  const keep = before.filter((name) => READ_ONLY_TOOLS.includes(name) && !SUPERVISOR_TOOLS.includes(name));
  return [...new Set([...keep, ...SUPERVISOR_TOOLS])];
}

/** The active tools outside supervision: the verdict tools are never among them. */
export function withoutSupervisorTools(active: readonly string[]): string[] {
  return active.filter((name) => !SUPERVISOR_TOOLS.includes(name));
}

export function sameTools(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name, i) => name === b[i]);
}
