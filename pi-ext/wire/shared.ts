// Decoders of records that more than one part of the wire carries: a role lease (roles,
// projects) and usage totals (usage reports, assignments). Kept apart from wire/decode.ts so
// that wire/projects.ts can use them without importing decode.ts, which imports it.

import { bool, f64, nullable, oneOf, record, req, str, u64, type Conv } from "./fields.ts";
import { ROLES, type Lease, type UsageTotals } from "./records.ts";

export const lease: Conv<Lease> = record({
  role: req(oneOf(ROLES)),
  repo_id: nullable(str),
  project: nullable(str),
  session_id: req(str),
  session_name: req(str),
  connected: req(bool),
  since: req(u64),
});

/** The fields of UsageTotals, for records that extend it. */
export const usageFields = {
  input: req(u64),
  output: req(u64),
  cache_read: req(u64),
  cache_write: req(u64),
  total_tokens: req(u64),
  cost: req(f64),
  records: req(u64),
};

export const usageTotals: Conv<UsageTotals> = record(usageFields);
