// A backend's shape, checked once at Device.open: every member the Device uses is read once, checked, and
// kept. The Device then calls the functions it read (with the backend as `this`) and uses the facts it read,
// so a backend cannot change under it: a getter, or a Proxy's trap, that answers differently later changes
// nothing, and one that throws or answers wrongly at open is a typed ArgumentError naming the member.
//
// A Proxy is accepted like any object (JavaScript cannot tell one apart, and a wrapper that logs or counts
// calls is a fair use): its `get` traps run once per member at open, never again. Only `lastWiringError`, a
// message that changes as wiring fails, is read each time it is needed (and a throw there reads as no
// message).
import type { NativeBackend, ViewMechanism } from "@nuvec/metal-native";
import { ArgumentError, describeValue } from "@nuvec/stats";

// Taken at load, as the Device's other intrinsics (environment.ts): a later patch cannot reroute its calls.
const reflectApply = Reflect.apply;
// Taken at load, as Reflect.apply is: a bound function is what a backend's method is called through (the
// engine calls one directly, where a wrapper of rest arguments makes an array per call).
const functionBind = Function.prototype.bind;

const PLATFORMS = ["metal", "host", "mock", "cuda"] as const;

/** Every {@link ViewMechanism} an addon reports; a backend that says none (the mock) leaves it out. */
const VIEW_MECHANISMS = Object.keys({ "backing-store": true, "node-api": true } satisfies Record<
  ViewMechanism,
  true
>);

/** How each member of a backend is read and checked. */
type MemberKind =
  | "method"
  | "optional method"
  | "size"
  | "optional size"
  | "string"
  | "platform"
  | "boolean"
  | "optional boolean"
  | "optional view mechanism"
  | "read when needed";

/**
 * Every member of {@link NativeBackend}, and how it is checked. A `Record` over the interface's keys: a member
 * added to the interface and not here fails to compile, so the Device never silently drops one.
 */
const MEMBERS: Readonly<Record<keyof NativeBackend, MemberKind>> = {
  name: "string",
  platform: "platform",
  memorySize: "size",
  recommendedMaxWorkingSetSize: "size",
  maxBufferLength: "size",
  resourceLimit: "size",
  pageSize: "size",
  supportsResidencySets: "boolean",
  hostVisible: "optional boolean",
  newBuffer: "method",
  newBufferRange: "optional method",
  mapGranularity: "optional size",
  reserveAddressSpace: "optional method",
  mapMemory: "optional method",
  unmapMemory: "optional method",
  mapFile: "method",
  newResidencySet: "method",
  attachResidencySet: "method",
  checkMetalDevice: "optional method",
  newStream: "optional method",
  loadModule: "optional method",
  counters: "method",
  viewMechanism: "optional view mechanism",
  lastWiringError: "read when needed",
};

function bad(member: string, message: string, cause?: unknown): ArgumentError {
  return new ArgumentError(
    `backend.${member}`,
    `Device.open(): backend.${member} ${message}`,
    cause === undefined ? undefined : { cause },
  );
}

/** Reads `backend[member]` once; a throwing getter or trap is an ArgumentError naming it. */
function read(backend: object, member: string): unknown {
  try {
    return (backend as Record<string, unknown>)[member];
  } catch (error) {
    throw bad(
      member,
      `could not be read: ${error instanceof Error ? error.message : describeValue(error)}`,
      error,
    );
  }
}

/**
 * Checks `backend` (once, at open) and returns the backend the Device uses: a frozen object of what was read,
 * each method calling the function read with `backend` as `this`.
 *
 * @throws ArgumentError naming the member (`backend.newBuffer`, …) that is missing, of the wrong type, or
 *   whose reading threw.
 */
export function checkedBackend(backend: unknown): NativeBackend {
  if ((typeof backend !== "object" && typeof backend !== "function") || backend === null) {
    throw new ArgumentError(
      "backend",
      `Device.open(): backend must be an object, got ${describeValue(backend)}`,
    );
  }
  const apply = reflectApply;
  const shape: Record<string, unknown> = {};
  for (const [member, kind] of Object.entries(MEMBERS) as [string, MemberKind][]) {
    if (kind === "read when needed") continue;
    const value = read(backend, member);
    const optional = kind.startsWith("optional");
    if (value === undefined && optional) continue;
    if (kind === "method" || kind === "optional method") {
      if (typeof value !== "function") {
        throw bad(
          member,
          value === undefined ? "is missing (a function)" : `must be a function, got ${describeValue(value)}`,
        );
      }
      shape[member] = apply(functionBind, value, [backend]);
    } else if (kind === "size" || kind === "optional size") {
      if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
        throw bad(member, `must be a non-negative safe integer, got ${describeValue(value)}`);
      }
      shape[member] = value;
    } else if (kind === "string") {
      if (typeof value !== "string") throw bad(member, `must be a string, got ${describeValue(value)}`);
      shape[member] = value;
    } else if (kind === "optional view mechanism") {
      if (!(VIEW_MECHANISMS as readonly unknown[]).includes(value)) {
        throw bad(
          member,
          `must be one of ${VIEW_MECHANISMS.join(", ")} when given, got ${describeValue(value)}`,
        );
      }
      shape[member] = value;
    } else if (kind === "platform") {
      if (!(PLATFORMS as readonly unknown[]).includes(value)) {
        throw bad(member, `must be one of ${PLATFORMS.join(", ")}, got ${describeValue(value)}`);
      }
      shape[member] = value;
    } else {
      if (typeof value !== "boolean") throw bad(member, `must be a boolean, got ${describeValue(value)}`);
      shape[member] = value;
    }
  }
  // Address spaces: a granularity (a power of two) with all three calls, or none of them.
  const mapGranularity = shape.mapGranularity as number | undefined;
  const spaceCalls = ["reserveAddressSpace", "mapMemory", "unmapMemory"].filter((member) => member in shape);
  if (mapGranularity !== undefined) {
    if (mapGranularity <= 0 || (mapGranularity & (mapGranularity - 1)) !== 0 || mapGranularity > 2 ** 30) {
      throw bad("mapGranularity", `must be a power of two when given, got ${describeValue(mapGranularity)}`);
    }
    if (spaceCalls.length !== 3) {
      throw bad("mapGranularity", "is given without reserveAddressSpace, mapMemory and unmapMemory");
    }
  } else {
    for (const member of spaceCalls) delete shape[member];
  }
  // Streams: both calls, or neither.
  if ("newStream" in shape !== "loadModule" in shape) {
    throw bad(
      "newStream" in shape ? "loadModule" : "newStream",
      `is missing while backend.${"newStream" in shape ? "newStream" : "loadModule"} is given (a backend with streams has both)`,
    );
  }
  // CUDA's device ordinal (beyond the interface), which a 0-byte buffer's handle names.
  const ordinal = shape.platform === "cuda" ? read(backend, "device") : undefined;
  if (typeof ordinal === "number") shape.device = ordinal;
  Object.defineProperty(shape, "lastWiringError", {
    enumerable: true,
    get: () => {
      try {
        const message = (backend as { lastWiringError?: unknown }).lastWiringError;
        return typeof message === "string" ? message : undefined;
      } catch {
        return undefined;
      }
    },
  });
  return Object.freeze(shape) as unknown as NativeBackend;
}
