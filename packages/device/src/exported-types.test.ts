// What `@nuvec/device` exports for the types a user writes: the policy and release-order lists `Device.open`
// checks its options against (the allocator's own lists, not copies), OutOfMemoryError's fields by code, and
// the backend's view mechanism. The `expectTypeOf` and `@ts-expect-error` lines are checked by the package's
// typecheck (`tsc -p tsconfig.test.json`); the runtime lines pin what the Device does with each.
import * as allocator from "@nuvec/allocator";
import { MockBackend } from "@nuvec/metal-native/mock";
import { describe, expect, expectTypeOf, it } from "vitest";
import { thrown } from "../../stats/test/thrown.js";
import {
  ALLOCATOR_POLICIES,
  type AllocatorPolicy,
  ArgumentError,
  BOUNDED_RELEASES,
  type BoundedRelease,
  Device,
  type DeviceOptions,
  OutOfMemoryError,
  type ViewMechanism,
} from "./index.js";

const open = (options: DeviceOptions = {}) =>
  Device.open({ backend: new MockBackend(), safetyNet: false, ...options });

describe("ALLOCATOR_POLICIES and BOUNDED_RELEASES", () => {
  it("are the allocator's lists themselves, readonly tuples of the option types", () => {
    expect(ALLOCATOR_POLICIES).toBe(allocator.ALLOCATOR_POLICIES);
    expect(BOUNDED_RELEASES).toBe(allocator.BOUNDED_RELEASES);
    expect([...ALLOCATOR_POLICIES]).toEqual(["bounded", "mlx", "segments"]);
    expect([...BOUNDED_RELEASES]).toEqual(["fitting", "least-recent", "largest"]);
    expectTypeOf(ALLOCATOR_POLICIES).toEqualTypeOf<readonly ["bounded", "mlx", "segments"]>();
    expectTypeOf<(typeof BOUNDED_RELEASES)[number]>().toEqualTypeOf<BoundedRelease>();
    expectTypeOf<NonNullable<DeviceOptions["policy"]>>().toEqualTypeOf<AllocatorPolicy>();
    expectTypeOf<NonNullable<DeviceOptions["boundedRelease"]>>().toEqualTypeOf<BoundedRelease>();
  });

  it("Device.open accepts every name of each list, and reports the policy it runs", () => {
    for (const policy of ALLOCATOR_POLICIES) {
      using device = open({ policy });
      expect(device.info().policy).toBe(policy);
    }
    for (const boundedRelease of BOUNDED_RELEASES) {
      using device = open({ policy: "bounded", boundedRelease });
      device.malloc(1000).free();
      expect(device.counters().cacheMisses).toBe(1);
    }
  });

  it("Device.open refuses a name in neither list, naming the option, and makes nothing", () => {
    for (const [option, value] of [
      ["policy", "lru"],
      ["boundedRelease", "smallest"],
    ] as const) {
      const backend = new MockBackend();
      const error = thrown(() => Device.open({ backend, [option]: value } as DeviceOptions));
      expect(error).toBeInstanceOf(ArgumentError);
      expect(error).toMatchObject({ code: "ERR_NUVEC_INVALID_ARGUMENT", argument: option });
      expect(backend.counters()).toMatchObject({ buffersMade: 0, residencySetsMade: 0 });
    }
  });
});

describe("OutOfMemoryError from the Device, typed by code", () => {
  it("the memory limit's refusal narrows to its numbers", () => {
    using device = open({ memoryLimit: 4096 });
    const kept = device.malloc(4096);
    const error = thrown(() => device.malloc(1));
    if (!(error instanceof OutOfMemoryError) || error.code !== "ERR_NUVEC_OUT_OF_MEMORY") throw error;
    expectTypeOf(error.active).toEqualTypeOf<number>();
    expectTypeOf(error.limit).toEqualTypeOf<number>();
    expect([error.requested, error.active, error.mapped, error.quarantined, error.limit]).toEqual([
      256, 4096, 0, 0, 4096,
    ]);
    kept.free();
  });
});

describe("the backend's view mechanism", () => {
  class Reporting extends MockBackend {
    constructor(readonly reported: unknown) {
      super();
    }
    get viewMechanism(): ViewMechanism {
      return this.reported as ViewMechanism;
    }
  }

  it("is a typed member of the backend a Device user reads", () => {
    expectTypeOf<Device["native"]["backend"]["viewMechanism"]>().toEqualTypeOf<ViewMechanism | undefined>();
    expectTypeOf<ViewMechanism>().toEqualTypeOf<"backing-store" | "node-api">();
    // @ts-expect-error no backend reports a mechanism outside the two.
    const made: ViewMechanism = "copy";
    expect(made).toBe("copy");
  });

  it("is read at open: each mechanism kept, the mock's absence kept, anything else refused", () => {
    for (const mechanism of ["backing-store", "node-api"] as const) {
      using device = Device.open({ backend: new Reporting(mechanism), safetyNet: false });
      expect(device.native.backend.viewMechanism).toBe(mechanism);
    }
    using plain = open();
    expect(plain.native.backend.viewMechanism).toBeUndefined();
    for (const [value, described] of [
      ["v8", '"v8"'],
      [1, "1"],
      [null, "null"],
    ] as const) {
      const backend = new Reporting(value);
      const error = thrown(() => Device.open({ backend }));
      expect(error).toBeInstanceOf(ArgumentError);
      expect(error).toMatchObject({
        argument: "backend.viewMechanism",
        message: `Device.open(): backend.viewMechanism must be one of backing-store, node-api when given, got ${described}`,
      });
      expect(backend.counters()).toMatchObject({ buffersMade: 0, residencySetsMade: 0 });
    }
  });
});
