// The grammar of the `/supervise` command, parsed into what to send to the core. Pure.
//
//   /supervise                       pair with the one free session in this directory
//   /supervise @<session> [goal]     pair with that session (id, id prefix or name)
//   /supervise <goal | path>         pair with the free session here, with a goal
//   /supervise stop                  end the pairing (unpair)
//   /supervise goal <goal | path>    change the goal (set_goal)
//   /supervise look                  ask for a view now (look)
//   /supervise status                show the pairing
//   /supervise help
//
// A goal that is one word containing `/` or `.` is a file the core reads, relative to this
// session's cwd; the extension passes it through unchanged.

export type SuperviseCommand =
  | { kind: "start"; worker?: string; goal?: string }
  | { kind: "stop" }
  | { kind: "goal"; goal: string }
  | { kind: "look" }
  | { kind: "status" }
  | { kind: "help" }
  | { kind: "invalid"; message: string };

export const SUPERVISE_USAGE = [
  "/supervise [@session] [goal | goal-file]   supervise a session (default: the one free session in this directory)",
  "/supervise goal <goal | goal-file>         change the goal",
  "/supervise look                            show the worker's progress now",
  "/supervise status                          show the pairing",
  "/supervise stop                            stop supervising",
].join("\n");

export function parseSuperviseArgs(raw: string): SuperviseCommand {
  const args = raw.trim();
  const lower = args.toLowerCase();
  if (lower === "stop" || lower === "look" || lower === "status" || lower === "help") return { kind: lower };
  if (lower === "goal") return { kind: "invalid", message: "/supervise goal needs the new goal (text or a file path)" };
  const goalMatch = /^goal\s+([\s\S]+)$/i.exec(args);
  if (goalMatch !== null) return { kind: "goal", goal: (goalMatch[1] ?? "").trim() };
  if (args === "") return { kind: "start" };
  if (args.startsWith("@")) {
    const match = /^@(\S*)\s*([\s\S]*)$/.exec(args);
    const worker = match?.[1] ?? "";
    if (worker === "") return { kind: "invalid", message: "@ must be followed by a session id, id prefix or name" };
    const goal = (match?.[2] ?? "").trim();
    return goal === "" ? { kind: "start", worker } : { kind: "start", worker, goal };
  }
  return { kind: "start", goal: args };
}
