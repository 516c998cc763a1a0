// A lint tsc has no switch for: the extension's own modules (top level, wire/ and the
// generated wire/generated/) never use the `any` type.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Source without comments and string literals, so prose mentioning "any" does not count. */
function code(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/\/\/.*$/gm, "")
    .replace(/`(?:\\.|[^`\\])*`/g, "``")
    .replace(/"(?:\\.|[^"\\])*"/g, '""')
    .replace(/'(?:\\.|[^'\\])*'/g, "''");
}

test("no `any` in the extension's modules", () => {
  const files = [
    ...readdirSync(root),
    ...readdirSync(join(root, "wire")).map((f) => `wire/${f}`),
    ...readdirSync(join(root, "wire", "generated")).map((f) => `wire/generated/${f}`),
  ].filter((f) => f.endsWith(".ts"));
  assert.ok(files.includes("wire.ts") && files.includes("index.ts"));
  assert.ok(files.includes("wire/decode.ts") && files.includes("wire/fields.ts"));
  assert.ok(files.includes("wire/generated/decoders.ts"));
  for (const f of files) {
    const lines = code(readFileSync(join(root, f), "utf8")).split("\n");
    const hits = lines.flatMap((l, i) => (/(?::|<|\bas|\|)\s*any\b|\bany\s*(?:\[\]|>|\||,|\))/.test(l) ? [`${f}:${i + 1}: ${l.trim()}`] : []));
    assert.deepEqual(hits, [], `uses of any in ${f}`);
  }
});
