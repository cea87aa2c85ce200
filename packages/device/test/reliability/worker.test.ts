// A Device used from a worker thread (real host backend): it works there, and when the worker exits its
// memory is given back (the addon's cleanup hooks), closed or not: VmLck and the main thread's backend
// counters are as before.
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { expect, it } from "vitest";
import { describeOnHost, hostBackend, packageDirectory, processFigures, sectionFigures } from "./support.js";

const MIB = 1024 ** 2;
const script = join(packageDirectory, "test/reliability/children/worker.mjs");
const figures = sectionFigures("worker", {} as Record<string, unknown>);

function runWorker(
  close: boolean,
): Promise<{ ok: boolean; stats: { active: number; wired: number }; exitCode: number }> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(script, { workerData: { close } });
    let message: { ok: boolean; stats: { active: number; wired: number } } | undefined;
    worker.on("message", (value) => {
      message = value;
    });
    worker.on("error", reject);
    worker.on("exit", (exitCode) =>
      message ? resolve({ ...message, exitCode }) : reject(new Error("no message")),
    );
  });
}

describeOnHost("a Device in a worker thread", () => {
  for (const close of [true, false]) {
    it(`works, and is released when the worker exits (${close ? "closed first" : "left open"})`, async () => {
      const main = hostBackend().counters();
      const { vmLck, maps } = processFigures();
      const result = await runWorker(close);
      expect(result.exitCode).toBe(0);
      expect(result.ok).toBe(true);
      expect(result.stats.active).toBeGreaterThanOrEqual(8 * MIB);
      // Back to where it was: nothing locked, nothing counted on this thread's backend.
      const after = processFigures();
      expect(after.vmLck).toBe(vmLck);
      expect(hostBackend().counters()).toEqual(main);
      figures[close ? "closed" : "leftOpen"] = {
        workerActive: result.stats.active,
        workerWired: result.stats.wired,
        vmLckDelta: after.vmLck - vmLck,
        mapsDelta: after.maps - maps,
      };
    });
  }
});
