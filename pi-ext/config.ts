// Settings the extension reads from its environment, resolved once per session start: where
// the core's socket is, whether to start `shepherd up` when no core answers, which role hint this
// session registers with (lead or supervisor; Manager and Chief are granted by the core), whether it is a pi-subagents
// child, whether a supervisor's old looks are pruned from its context, where Pi's agent dir
// is (for SUPERVISOR.md), where an autostarted core logs, which runs' results go to the phone, and where to write a debug log. Pure functions over an env object,
// so tests can pass their own.

import { accessSync, constants as fsConstants, statSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, isAbsolute, join } from "node:path";

import { parseResultsMode } from "./result.ts";
import { RESULTS_MODES, ROLES, type ResultsMode, type Role } from "./wire.ts";

/** This extension's version (kept equal to package.json by a test). */
export const EXT_VERSION = "0.1.0";
/** `client_name` in `hello`. */
export const CLIENT_NAME = `shepherd-pi-ext ${EXT_VERSION}`;

export type Env = Readonly<Record<string, string | undefined>>;

export interface ShepherdConfig {
  /** Where the core listens. */
  socketPath: string;
  /** Start `shepherd up` when no core answers (SHEPHERD_AUTOSTART=0 turns it off). */
  autostart: boolean;
  /** The `shepherd` binary found on PATH, if any. */
  shepherdBin: string | null;
  /** Role hint this session registers with (SHEPHERD_ROLE: lead or supervisor, default lead). */
  role: Role;
  /** Set when SHEPHERD_ROLE held something that is not a role. */
  roleProblem: string | null;
  /** Append debug lines here (SHEPHERD_EXT_LOG), or keep them in memory only. */
  logFile: string | null;
  /** A pi-subagents child (PI_SUBAGENT_CHILD set): the core never offers it as a worker. */
  subagent: boolean;
  /** Prune views older than the last three looks from a supervisor's context (SHEPHERD_PRUNE=0 turns it off). */
  prune: boolean;
  /** Pi's agent dir ($PI_CODING_AGENT_DIR, else ~/.pi/agent). */
  agentDir: string;
  /** Where an autostarted core logs (`shepherd up --log-file <this>`). */
  coreLog: string;
  /** This session's `results` setting (SHEPHERD_RESULTS: all, asks_only, off); null: the core's `core.results`. */
  results: ResultsMode | null;
  /** Set when SHEPHERD_RESULTS held something that is not a mode. */
  resultsProblem: string | null;
}

/** `0`, `false`, `no`, `off` (any case, trimmed). */
function isOff(value: string | undefined): boolean {
  return ["0", "false", "no", "off"].includes((value ?? "").trim().toLowerCase());
}

/** `~` and `~/…` expanded the way Pi expands PI_CODING_AGENT_DIR. */
export function expandTilde(path: string, home: string): string {
  if (path === "~") return home;
  if (path.startsWith("~/")) return join(home, path.slice(2));
  return path;
}

/** Pi's agent dir: $PI_CODING_AGENT_DIR, else ~/.pi/agent. */
export function agentDir(env: Env, home: string = homedir()): string {
  const dir = env["PI_CODING_AGENT_DIR"];
  return dir !== undefined && dir !== "" ? expandTilde(dir, home) : join(home, ".pi", "agent");
}

/** $SHEPHERD_SOCKET, else <agent dir>/shepherd/shepherd.sock (docs/PROTOCOL.md). */
export function socketPath(env: Env, home: string = homedir()): string {
  const explicit = env["SHEPHERD_SOCKET"];
  if (explicit !== undefined && explicit !== "") return expandTilde(explicit, home);
  return join(agentDir(env, home), "shepherd", "shepherd.sock");
}

/** The background core's log: $SHEPHERD_STATE_DIR/core.log, else <agent dir>/shepherd/core.log. */
export function coreLogPath(env: Env, home: string = homedir()): string {
  const stateDir = env["SHEPHERD_STATE_DIR"];
  if (stateDir !== undefined && stateDir !== "") return join(expandTilde(stateDir, home), "core.log");
  return join(agentDir(env, home), "shepherd", "core.log");
}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** First executable `name` in the PATH directories, like `command -v`. */
export function findOnPath(name: string, pathVar: string | undefined): string | null {
  if (pathVar === undefined) return null;
  for (const dir of pathVar.split(delimiter)) {
    if (dir === "" || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return null;
}

export function loadConfig(env: Env, home: string = homedir()): ShepherdConfig {
  const rawRole = env["SHEPHERD_ROLE"];
  let role: Role = "lead";
  let roleProblem: string | null = null;
  if (rawRole !== undefined && rawRole !== "") {
    const found = ROLES.find((r) => r === rawRole.trim().toLowerCase());
    if (found === undefined) roleProblem = `SHEPHERD_ROLE=${rawRole} is not one of ${ROLES.join(", ")}; using lead`;
    else if (found === "manager" || found === "chief") {
      roleProblem = `SHEPHERD_ROLE=${rawRole}: the core grants the ${found} role, not the environment; this session starts as a Lead (run /${found} in it)`;
    } else role = found;
  }
  const autostart = !isOff(env["SHEPHERD_AUTOSTART"]);
  const logFile = env["SHEPHERD_EXT_LOG"];
  const subagentVar = env["PI_SUBAGENT_CHILD"];
  const rawResults = env["SHEPHERD_RESULTS"];
  let results: ResultsMode | null = null;
  let resultsProblem: string | null = null;
  if (rawResults !== undefined && rawResults.trim() !== "") {
    results = parseResultsMode(rawResults);
    if (results === null) resultsProblem = `SHEPHERD_RESULTS=${rawResults} is not one of ${RESULTS_MODES.join(", ")}; the core's setting applies`;
  }
  return {
    socketPath: socketPath(env, home),
    autostart,
    shepherdBin: findOnPath("shepherd", env["PATH"]),
    role,
    roleProblem,
    logFile: logFile !== undefined && logFile !== "" ? expandTilde(logFile, home) : null,
    subagent: subagentVar !== undefined && subagentVar !== "",
    prune: !isOff(env["SHEPHERD_PRUNE"]),
    agentDir: agentDir(env, home),
    coreLog: coreLogPath(env, home),
    results,
    resultsProblem,
  };
}
