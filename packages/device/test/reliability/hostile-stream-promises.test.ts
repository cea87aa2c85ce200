// Promises of the Device's streams that nobody awaits yet when they reject (a kernel failed, the event was
// released, the device closed): never an unhandled rejection, which under Node's default would end the
// process. The caller who awaits them later still gets the rejection.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { streamDevice } from "../streams-support.js";

const failing = {
  parameters: ["i32" as const],
  run(): void {
    throw new Error("the kernel failed");
  },
};

describe("stream promises that reject before anyone awaits them", () => {
  const unhandled: unknown[] = [];
  const listener = (reason: unknown) => unhandled.push(reason);
  beforeEach(() => {
    unhandled.length = 0;
    process.on("unhandledRejection", listener);
  });
  afterEach(() => {
    process.off("unhandledRejection", listener);
  });

  it("a read, done() and an event's done() after a failed kernel, awaited a macrotask later", async () => {
    const { device } = streamDevice("auto");
    const stream = device.newStream();
    const kernel = device.loadModule({ mock: { failing } }).kernel("failing");
    const x = device.malloc(16);
    stream.launch(kernel, { grid: [1], block: [1] }, [{ i32: 1 }]);
    const read = stream.read(x);
    const done = stream.done();
    const event = stream.record();
    const eventDone = event.done();
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(unhandled).toEqual([]);
    for (const promise of [read, done, eventDone]) await expect(promise).rejects.toThrow("the kernel failed");
    event.release();
    device.close();
  });

  it("an event's done() after its release, and work dropped by close, never awaited", async () => {
    const { device } = streamDevice("manual");
    const stream = device.newStream();
    const event = stream.record();
    event.release();
    const refused = event.done();
    const x = device.malloc(16);
    stream.write(x, new Uint8Array(16));
    const dropped = stream.read(x);
    device.close();
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(unhandled).toEqual([]);
    await expect(refused).rejects.toMatchObject({ code: "ERR_NUVEC_RELEASED" });
    await expect(dropped).rejects.toMatchObject({ name: "StateError" });
  });
});
