// The `hostile` part of the reliability suite, for teardowns: a step that throws inside `close()` (a buffer's
// or a mapping's release, a residency set's release, an `onRelease`-like failure in the backend) must not
// stop the others. The device ends closed, every backend object is released, a second close does nothing,
// and the first failure comes out once everything ran, later ones attached as its `suppressed`.
import { MockBackend } from "@nuvec/metal-native/mock";
import { Teardown } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../../stats/test/scratch.js";
import { thrown as thrownBy } from "../../../stats/test/thrown.js";
import { Device } from "../../src/index.js";
import { residencyOver } from "../../src/parts.js";

const MIB = 1024 ** 2;
const scratch = scratchFolder("nuvec-reliability-teardown-");

/** What the backend still holds. */
function live(backend: MockBackend) {
  const counters = backend.counters();
  return {
    buffers: counters.buffersMade - counters.buffersReleased,
    mappings: counters.mappingsMade - counters.mappingsReleased,
    sets: backend.liveResidencySets.length,
  };
}

/** Makes `object.release()` release, then throw `message`. */
function releaseThenThrow(object: { release(): void }, message: string): void {
  const release = object.release.bind(object);
  object.release = () => {
    release();
    throw new Error(message);
  };
}

describe("hostile: a step of Device.close() throws (was: closed stayed false, the rest never ran)", () => {
  it("a live buffer's release throws: every buffer, mapping and set is released, the device ends closed", () => {
    const backend = new MockBackend();
    // Every buffer made while the test's flag is on has a release that throws after releasing.
    const newBuffer = MockBackend.prototype.newBuffer;
    let serial = 0;
    backend.newBuffer = function (this: MockBackend, bytes: number) {
      const buffer = newBuffer.call(this, bytes);
      const mine = serial++;
      if (mine === 1 || mine === 2) releaseThenThrow(buffer, `release ${mine} failed`);
      return buffer;
    };
    const path = scratch.write("weights.bin", new Uint8Array(64 * 1024).fill(1));
    const device = Device.open({ backend, wiredLimit: 64 * MIB });
    const buffers = [1, 2, 3, 4].map((n) => device.malloc(n * MIB));
    device.mapFile(path);
    buffers[3]?.free(); // one in the cache
    const error = thrownBy(() => device.close());
    expect(device.closed).toBe(true);
    // The first failure itself, the later one attached.
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/^release [12] failed$/);
    expect((error as { suppressed?: unknown[] }).suppressed).toHaveLength(1);
    // Everything went back to the backend: nothing live, nothing mapped, no residency set.
    expect(live(backend)).toEqual({ buffers: 0, mappings: 0, sets: 0 });
    expect(device.memoryStats()).toMatchObject({ active: 0, cache: 0, mapped: 0 });
    // Idempotent: a second close does nothing and throws nothing.
    expect(() => device.close()).not.toThrow();
    expect(() => device.malloc(1)).toThrow(expect.objectContaining({ code: "ERR_NUVEC_DEVICE_CLOSED" }));
  });

  it("a residency set's release throws: the buffers and the mapping are released all the same", () => {
    const backend = new MockBackend();
    const newResidencySet = MockBackend.prototype.newResidencySet;
    backend.newResidencySet = function (this: MockBackend) {
      const set = newResidencySet.call(this);
      if (set !== undefined) releaseThenThrow(set, "set release failed");
      return set;
    };
    const device = Device.open({ backend, wiredLimit: 64 * MIB });
    device.malloc(2 * MIB);
    device.malloc(3 * MIB).free();
    const error = thrownBy(() => device.close());
    expect((error as Error).message).toBe("set release failed");
    expect(device.closed).toBe(true);
    expect(live(backend)).toEqual({ buffers: 0, mappings: 0, sets: 0 });
    expect(() => device[Symbol.dispose]()).not.toThrow();
  });

  it("a mapped file's release throws on free(): the file leaves the books and mapped reads 0", () => {
    const backend = new MockBackend();
    const mapFile = MockBackend.prototype.mapFile;
    backend.mapFile = function (this: MockBackend, path: string) {
      const file = mapFile.call(this, path);
      releaseThenThrow(file, "unmap failed");
      return file;
    };
    const path = scratch.write("mapped.bin", new Uint8Array(64 * 1024).fill(2));
    const device = Device.open({ backend });
    const file = device.mapFile(path);
    expect(() => file.free()).toThrow("unmap failed");
    expect(file.freed).toBe(true);
    expect(device.memoryStats().mapped).toBe(0);
    expect(() => file.free()).toThrow(expect.objectContaining({ code: "ERR_NUVEC_MAPPING_FREED" }));
    device.close();
  });
});

describe("hostile: close() called again from inside close() (a release that closes the device)", () => {
  it("the inner call returns at once; the outer one releases everything once", () => {
    const backend = new MockBackend();
    const newBuffer = MockBackend.prototype.newBuffer;
    let device: Device | undefined;
    let inner = 0;
    backend.newBuffer = function (this: MockBackend, bytes: number) {
      const buffer = newBuffer.call(this, bytes);
      const release = buffer.release.bind(buffer);
      buffer.release = () => {
        inner += 1;
        device?.close();
        release();
      };
      return buffer;
    };
    device = Device.open({ backend });
    device.malloc(MIB);
    device.malloc(2 * MIB);
    device.malloc(MIB).free();
    expect(() => device?.close()).not.toThrow();
    expect(inner).toBe(3);
    expect(device.closed).toBe(true);
    expect(live(backend)).toEqual({ buffers: 0, mappings: 0, sets: 0 });
  });
});

describe("hostile: a residency handle throws inside Residency.close() (was: sets after it never released)", () => {
  it("every set's release runs, the counters read 0, the first failure comes out", () => {
    const backend = new MockBackend();
    // Sets of 1% of the mock's 12 GiB working set (122 MiB): three 100 MiB buffers take three sets.
    const residency = residencyOver(backend, {}, "1", []);
    residency.setWiredLimit(1024 * MIB);
    const buffers = [1, 2, 3].map(() => backend.newBuffer(100 * MIB));
    for (const buffer of buffers) residency.insert(buffer, false);
    const made = backend.counters().residencySetsMade;
    expect(made).toBeGreaterThan(1);
    // Every set's release throws after releasing.
    for (const set of backend.liveResidencySets) releaseThenThrow(set, "set release failed");
    const error = thrownBy(() => residency.close());
    expect((error as Error).message).toBe("set release failed");
    expect((error as { suppressed?: unknown[] }).suppressed).toHaveLength(made - 1);
    expect(backend.liveResidencySets).toHaveLength(0);
    expect(residency.wired).toBe(0);
    expect(() => residency.close()).not.toThrow();
    for (const buffer of buffers) buffer.release();
  });
});

describe("Teardown: what a failed teardown throws", () => {
  it("nothing when every step ran cleanly; the one failure itself when one failed", () => {
    const clean = new Teardown();
    clean.run(() => {});
    expect(() => clean.finish()).not.toThrow();
    const one = new Teardown();
    const failure = new RangeError("one");
    one.run(() => {
      throw failure;
    });
    expect(thrownBy(() => one.finish())).toBe(failure);
    expect(Object.keys(failure)).not.toContain("suppressed");
  });

  it("the first failure, the later ones in `suppressed` (non-enumerable), every step run", () => {
    const teardown = new Teardown();
    const ran: number[] = [];
    for (const step of [0, 1, 2, 3]) {
      teardown.run(() => {
        ran.push(step);
        if (step !== 2) throw new Error(`step ${step}`);
      });
    }
    const error = thrownBy(() => teardown.finish()) as Error & { suppressed: Error[] };
    expect(ran).toEqual([0, 1, 2, 3]);
    expect(error.message).toBe("step 0");
    expect(error.suppressed.map((later) => later.message)).toEqual(["step 1", "step 3"]);
    expect(Object.getOwnPropertyDescriptor(error, "suppressed")?.enumerable).toBe(false);
  });

  it("a thrown primitive or a frozen error cannot carry them: an AggregateError of all, the first as cause", () => {
    for (const first of ["a string", Object.freeze(new Error("frozen"))]) {
      const teardown = new Teardown();
      teardown.run(() => {
        throw first;
      });
      teardown.run(() => {
        throw new Error("later");
      });
      const error = thrownBy(() => teardown.finish()) as AggregateError;
      expect(error).toBeInstanceOf(AggregateError);
      expect(error.cause).toBe(first);
      expect(error.errors).toHaveLength(2);
    }
  });
});
