// Autostart: the first unreachable core starts `shepherd up --log-file <log>`; when that
// core exits with a failure, the reason from its log is shown in one notice, once, however
// many reconnect attempts follow; a core started meanwhile by someone else shows nothing.

import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { describe, test } from "node:test";

import { Autostart, startFailureIn, startFailureNotice, type AutostartHost, type StartedCore } from "../autostart.ts";
import { coreLogPath } from "../config.ts";

const LOG = "/home/ada/.pi/agent/shepherd/core.log";

class FakeChild extends EventEmitter implements StartedCore {
  readonly pid = 4242;
  unref(): void {}
}

function harness(logText: string) {
  const notices: { text: string; level: string }[] = [];
  const spawned: { bin: string; args: string[]; child: FakeChild }[] = [];
  let log = "old line: the core did not start: an older failure\n";
  const host: AutostartHost = {
    spawn(bin, args) {
      const child = new FakeChild();
      spawned.push({ bin, args, child });
      log += logText;
      return child;
    },
    logSize: () => Buffer.byteLength("old line: the core did not start: an older failure\n"),
    readLog: (_path, offset) => Buffer.from(log).subarray(offset).toString("utf8"),
    notify: (text, level) => notices.push({ text, level }),
    log: () => {},
  };
  const auto = new Autostart(host, { socketPath: "/s.sock", autostart: true, shepherdBin: "/bin/shepherd", logPath: LOG }, () => 0);
  return { auto, notices, spawned };
}

describe("autostart", () => {
  test("a core that did not start is explained once, from its log, across reconnect attempts", () => {
    const line = "2026-12-03T05:50:00.000Z ERROR shepherd up: the core did not start: telegram.allowed_users is empty, so nobody could use the bot\n";
    const { auto, notices, spawned } = harness(line);
    auto.unreachable(false);
    assert.equal(spawned.length, 1);
    assert.deepEqual(spawned[0]?.args, ["up", "--log-file", LOG]);
    assert.equal(notices.length, 0, "nothing to say while it starts");
    spawned[0]?.child.emit("exit", 1, null);
    for (let i = 0; i < 5; i++) auto.unreachable(false);
    assert.equal(spawned.length, 1, "started once");
    assert.match(auto.failure ?? "", /allowed_users is empty/, "/shepherd shows it too");
    assert.deepEqual(notices, [
      {
        text: `shepherd: the core did not start: telegram.allowed_users is empty, so nobody could use the bot (see ${LOG})`,
        level: "error",
      },
    ]);
  });

  test("a failure with no reason in the log says how it exited", () => {
    const { auto, notices, spawned } = harness("");
    auto.unreachable(false);
    spawned[0]?.child.emit("exit", null, "SIGKILL");
    auto.unreachable(false);
    auto.unreachable(false);
    assert.deepEqual(notices.map((n) => n.text), [`shepherd: the core did not start (\`shepherd up\` was killed by SIGKILL); see ${LOG}`]);
  });

  test("a clean exit, or a core reached after all, shows nothing", () => {
    const { auto, notices, spawned } = harness("");
    auto.unreachable(false);
    spawned[0]?.child.emit("exit", 0, null);
    auto.unreachable(false);
    assert.equal(notices.length, 0);
    auto.unreachable(true);
    auto.unreachable(true);
    assert.equal(notices.length, 1);
    assert.match(notices[0]?.text ?? "", /lost the core at \/s.sock/);
  });

  test("the reason is read from text and JSON log lines; long ones are cut", () => {
    assert.equal(startFailureIn("a\nb ERROR shepherd up: the core did not start: bad toml (line 3)\n"), "bad toml (line 3)");
    const json = JSON.stringify({ level: "ERROR", fields: { message: 'the core did not start: "quoted" reason' } });
    assert.equal(startFailureIn(`${json}\n`), '"quoted" reason');
    assert.equal(startFailureIn("nothing here\n"), null);
    const long = startFailureNotice("x".repeat(1000), "exited with code 1", "/l");
    assert.ok(long.length < 400, long);
    assert.ok(long.endsWith("… (see /l)"), long);
  });

  test("the log follows SHEPHERD_STATE_DIR, else the agent dir", () => {
    assert.equal(coreLogPath({}, "/home/ada"), LOG);
    assert.equal(coreLogPath({ PI_CODING_AGENT_DIR: "/a" }, "/home/ada"), "/a/shepherd/core.log");
    assert.equal(coreLogPath({ SHEPHERD_STATE_DIR: "~/st" }, "/home/ada"), "/home/ada/st/core.log");
  });
});
