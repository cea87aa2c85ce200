// Hostile globals: the environment the Device runs in, changed under it. Each scenario runs in its own
// process (children/hostile-globals.mjs), because deleting or patching a global would change this runner too.
// What the Device relies on is taken when it loads (src/environment.ts); a backend is read and checked once,
// at open (src/backend-shape.ts).
import { describe, expect, it } from "vitest";
import { deviceBuilt, runChild } from "./support.js";

function run(scenario: string): Record<string, unknown> {
  const result = runChild("hostile-globals.mjs", {
    args: [scenario],
    nodeOptions: ["--expose-gc"],
    timeout: 60_000,
  });
  expect(result.stderr).toBe("");
  expect(result.status).toBe(0);
  return result.report as Record<string, unknown>;
}

describe.skipIf(!deviceBuilt)("hostile globals (each in a child process)", () => {
  it("FinalizationRegistry missing at load: open refuses the safety net with a typed error; safetyNet: false works", () => {
    // Without the check, the registry was made in the turn's batch: a ReferenceError out of an immediate,
    // the process gone.
    expect(run("no-finalization-registry")).toEqual({
      scenario: "no-finalization-registry",
      openWithSafetyNet: {
        name: "UnsupportedError",
        code: "ERR_NUVEC_UNSUPPORTED_ENVIRONMENT",
        message:
          "Device.open(): this JavaScript environment has no FinalizationRegistry, which the Device needs for its safety net: open with { safetyNet: false } to run without it (free every buffer yourself)",
      },
      pendingBefore: 1,
      pendingAfter: 0,
      active: 8192,
    });
  });

  it.each([
    [
      "WeakRef missing: nothing changes (the Device uses none); the safety net still reclaims a dropped buffer",
      "no-weakref",
      { leakedBuffers: 1 },
    ],
    [
      "Promise.resolve and Promise.prototype.then patched after load: free({ after }) neither throws nor stays pending",
      "promise-patched",
      {},
    ],
  ])("%s", (_title, scenario, more) => {
    // The deferred free settled, and nothing is left active.
    expect(run(scenario)).toEqual({ scenario, pendingBefore: 1, pendingAfter: 0, active: 0, ...more });
  });

  it("a Proxy backend: read once at open, never again; a trap that throws or lies at open is an ArgumentError naming the member, nothing made", () => {
    const outcome = run("proxy-backend");
    expect(outcome).toMatchObject({
      scenario: "proxy-backend",
      counters: 1,
      readsAfterOpen: 0,
      nativeBackendIsTheProxy: true,
    });
    expect(outcome.uncaught).toBeUndefined();
    const refusal = (argument: string, message: string) => ({
      name: "ArgumentError",
      code: "ERR_NUVEC_INVALID_ARGUMENT",
      argument,
      message,
      residencySetsMade: 0,
    });
    expect(outcome.refusals).toEqual({
      "throwing trap": refusal("backend.counters", "Device.open(): backend.counters could not be read: trap"),
      "missing method": refusal("backend.mapFile", "Device.open(): backend.mapFile is missing (a function)"),
      "a string size": refusal(
        "backend.pageSize",
        'Device.open(): backend.pageSize must be a non-negative safe integer, got "16384"',
      ),
      "not an object": refusal(
        "backend",
        "Device.open(): backend must be a native backend (an object), got 42",
      ),
    });
  });
});
