// Keeps a supervisor's context flat: before each model call (Pi's `context` event) views older
// than the last three looks lose their body, replaced by one line "[look N: view pruned]",
// and the assistant messages that answered them lose their reasoning (thinking) blocks. The
// verdict tool calls and their results stay, so the model still sees what it decided and
// when. A `worker_view` tool result belongs to the look it was fetched in and is pruned with
// it. Pure: works on a copy of the message list and returns null when nothing changes (Pi
// then keeps the original list and the provider's cached prefix). SHEPHERD_PRUNE=0 turns it
// off in supervise-pi.ts.

import { VIEW_CUSTOM_TYPE } from "./dedupe.ts";

/** Looks whose views stay whole. */
export const KEEP_LOOKS = 3;

/** The parts of Pi's AgentMessage this module reads; everything else is carried along. */
export interface PrunableMessage {
  role: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function lookOf(details: unknown): number | null {
  if (!isRecord(details)) return null;
  const look = details["look"];
  return typeof look === "number" && Number.isSafeInteger(look) ? look : null;
}

/** The look number of a view message, or null if `m` is not one. */
function viewLook(m: PrunableMessage, ordinal: number): number | null {
  if (m.role !== "custom" || !isRecord(m) || m["customType"] !== VIEW_CUSTOM_TYPE) return null;
  return lookOf(m["details"]) ?? -ordinal; // a view without a number still counts as its own look
}

function workerViewLook(m: PrunableMessage): number | null {
  if (m.role !== "toolResult" || !isRecord(m) || m["toolName"] !== "worker_view") return null;
  return lookOf(m["details"]);
}

export function prunedLine(look: number): string {
  return look > 0 ? `[look ${look}: view pruned]` : "[view pruned]";
}

function isThinking(block: unknown): boolean {
  return isRecord(block) && (block["type"] === "thinking" || block["type"] === "redacted_thinking");
}

/** The messages with old looks pruned, or null when there is nothing to prune. */
export function pruneLooks<M extends PrunableMessage>(messages: readonly M[], keep: number = KEEP_LOOKS): M[] | null {
  // The looks in the order their views appear; the last `keep` stay.
  const order: number[] = [];
  let ordinal = 0;
  for (const m of messages) {
    const look = viewLook(m, ordinal + 1);
    if (look === null) continue;
    ordinal++;
    if (!order.includes(look)) order.push(look);
  }
  if (order.length <= keep) return null;
  const pruned = new Set(order.slice(0, order.length - keep));

  let changed = false;
  let current: number | null = null; // the look the messages since the last view answer
  let seen = 0;
  const out = messages.map((m): M => {
    const look = viewLook(m, seen + 1);
    if (look !== null) {
      seen++;
      current = look;
      if (!pruned.has(look) || !isRecord(m)) return m;
      const line = prunedLine(look);
      if (m["content"] === line) return m;
      changed = true;
      return { ...m, content: line };
    }
    const fetched = workerViewLook(m);
    if (fetched !== null && pruned.has(fetched) && isRecord(m)) {
      const content = [{ type: "text", text: prunedLine(fetched) }];
      const before = m["content"];
      if (Array.isArray(before) && before.length === 1 && isRecord(before[0]) && before[0]["text"] === content[0]?.text) return m;
      changed = true;
      return { ...m, content };
    }
    if (m.role === "assistant" && current !== null && pruned.has(current) && isRecord(m)) {
      const blocks = m["content"];
      if (!Array.isArray(blocks) || !blocks.some(isThinking)) return m;
      const kept = blocks.filter((b) => !isThinking(b));
      if (kept.length === 0) return m; // an assistant message needs some content
      changed = true;
      return { ...m, content: kept };
    }
    return m;
  });
  return changed ? out : null;
}
