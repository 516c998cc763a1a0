// Environment settings: socket path, autostart switch, role, the shepherd binary lookup; and
// the extension's own metadata (version, Pi manifest, pins) kept consistent.

import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { agentDir, CLIENT_NAME, EXT_VERSION, findOnPath, loadConfig, socketPath } from "../config.ts";

const here = dirname(fileURLToPath(import.meta.url));
const home = "/home/ada";

describe("socket path", () => {
  test("defaults to ~/.pi/agent/shepherd/shepherd.sock", () => {
    assert.equal(socketPath({}, home), "/home/ada/.pi/agent/shepherd/shepherd.sock");
  });
  test("follows PI_CODING_AGENT_DIR, with ~ expanded as Pi does", () => {
    assert.equal(socketPath({ PI_CODING_AGENT_DIR: "/tmp/agent" }, home), "/tmp/agent/shepherd/shepherd.sock");
    assert.equal(socketPath({ PI_CODING_AGENT_DIR: "~/pi" }, home), "/home/ada/pi/shepherd/shepherd.sock");
    assert.equal(agentDir({ PI_CODING_AGENT_DIR: "" }, home), "/home/ada/.pi/agent");
  });
  test("SHEPHERD_SOCKET wins", () => {
    assert.equal(socketPath({ SHEPHERD_SOCKET: "/run/s.sock", PI_CODING_AGENT_DIR: "/tmp/agent" }, home), "/run/s.sock");
  });
});

describe("loadConfig", () => {
  test("autostart is on unless SHEPHERD_AUTOSTART turns it off", () => {
    assert.equal(loadConfig({}, home).autostart, true);
    for (const off of ["0", "false", "no", "off", " OFF "]) assert.equal(loadConfig({ SHEPHERD_AUTOSTART: off }, home).autostart, false, off);
    assert.equal(loadConfig({ SHEPHERD_AUTOSTART: "1" }, home).autostart, true);
  });
  test("role defaults to lead; SHEPHERD_ROLE overrides; nonsense is reported and ignored", () => {
    assert.equal(loadConfig({}, home).role, "lead");
    // Manager and Chief are granted by the core (/manager, /chief), never by the environment.
    const manager = loadConfig({ SHEPHERD_ROLE: "manager" }, home);
    assert.equal(manager.role, "lead");
    assert.match(manager.roleProblem ?? "", /\/manager/);
    const bad = loadConfig({ SHEPHERD_ROLE: "boss" }, home);
    assert.equal(bad.role, "lead");
    assert.match(bad.roleProblem ?? "", /boss/);
  });
  test("supervisor is a role", () => {
    const c = loadConfig({ SHEPHERD_ROLE: "Supervisor" }, home);
    assert.equal(c.role, "supervisor");
    assert.equal(c.roleProblem, null);
  });
  test("a pi-subagents child is one when PI_SUBAGENT_CHILD is set to anything", () => {
    assert.equal(loadConfig({}, home).subagent, false);
    assert.equal(loadConfig({ PI_SUBAGENT_CHILD: "" }, home).subagent, false);
    assert.equal(loadConfig({ PI_SUBAGENT_CHILD: "1" }, home).subagent, true);
  });
  test("pruning is on unless SHEPHERD_PRUNE turns it off", () => {
    assert.equal(loadConfig({}, home).prune, true);
    for (const off of ["0", "false", "no", "off"]) assert.equal(loadConfig({ SHEPHERD_PRUNE: off }, home).prune, false, off);
    assert.equal(loadConfig({ SHEPHERD_PRUNE: "1" }, home).prune, true);
  });
  test("the agent dir (for SUPERVISOR.md) follows PI_CODING_AGENT_DIR", () => {
    assert.equal(loadConfig({}, home).agentDir, join(home, ".pi", "agent"));
    assert.equal(loadConfig({ PI_CODING_AGENT_DIR: "~/agent" }, home).agentDir, join(home, "agent"));
  });
  test("finds an executable shepherd on PATH, skipping non-executables", () => {
    const dir = mkdtempSync(join(tmpdir(), "shepherd-path-"));
    try {
      writeFileSync(join(dir, "shepherd"), "#!/bin/sh\n");
      chmodSync(join(dir, "shepherd"), 0o644);
      assert.equal(findOnPath("shepherd", `relative:${dir}`), null, "not executable, relative entries skipped");
      chmodSync(join(dir, "shepherd"), 0o755);
      assert.equal(findOnPath("shepherd", `/nonexistent:${dir}`), join(dir, "shepherd"));
      assert.equal(loadConfig({ PATH: dir }, home).shepherdBin, join(dir, "shepherd"));
      assert.equal(loadConfig({ PATH: "/nonexistent" }, home).shepherdBin, null);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("package metadata", () => {
  const pkg: unknown = JSON.parse(readFileSync(join(here, "..", "package.json"), "utf8"));
  const field = (path: string[]): unknown => path.reduce<unknown>((v, k) => (typeof v === "object" && v !== null ? (v as Record<string, unknown>)[k] : undefined), pkg);

  test("EXT_VERSION is package.json's version", () => {
    assert.equal(field(["version"]), EXT_VERSION);
    assert.equal(CLIENT_NAME, `shepherd-pi-ext ${EXT_VERSION}`);
  });
  test("Pi loads index.ts through the package manifest", () => {
    assert.deepEqual(field(["pi", "extensions"]), ["./index.ts"]);
  });
  test("the Pi and Node pins are exact versions", () => {
    assert.match(String(field(["devDependencies", "@earendil-works/pi-coding-agent"])), /^1\.6\.\d+$/);
    assert.match(String(field(["devEngines", "runtime", "version"])), /^22\.\d+\.\d+$/);
  });
});
