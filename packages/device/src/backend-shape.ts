// A backend's shape, checked once at Device.open: every member the Device uses is read once, checked, and
// kept. The Device then calls the functions it read (with the backend as `this`) and uses the facts it read,
// so a backend cannot change under it: a getter, or a Proxy's trap, that answers differently later changes
// nothing, and one that throws or answers wrongly at open is a typed ArgumentError naming the member.
//
// A Proxy is accepted like any object (JavaScript cannot tell one apart, and a wrapper that logs or counts
// calls is a fair use): its `get` traps run once per member at open, never again. Only `lastWiringError`, a
// message that changes as wiring fails, is read each time it is needed (and a throw there reads as no
// message).
import type { NativeBackend } from "@nuvec/metal-native";
import { ArgumentError, describeValue } from "@nuvec/stats";

const PLATFORMS = ["metal", "host", "mock", "cuda"] as const;
const METHODS = ["newBuffer", "mapFile", "newResidencySet", "attachResidencySet", "counters"] as const;
const OPTIONAL_METHODS = [
  "newBufferRange",
  "checkMetalDevice",
  "reserveAddressSpace",
  "mapMemory",
  "unmapMemory",
] as const;
const SIZES = [
  "memorySize",
  "recommendedMaxWorkingSetSize",
  "maxBufferLength",
  "resourceLimit",
  "pageSize",
] as const;

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
  const apply = Reflect.apply;
  const shape: Record<string, unknown> = {};
  for (const member of [...METHODS, ...OPTIONAL_METHODS]) {
    const value = read(backend, member);
    const optional = (OPTIONAL_METHODS as readonly string[]).includes(member);
    if (value === undefined && optional) continue;
    if (typeof value !== "function") {
      throw bad(
        member,
        value === undefined ? "is missing (a function)" : `must be a function, got ${describeValue(value)}`,
      );
    }
    shape[member] = (...args: unknown[]) => apply(value, backend, args);
  }
  for (const member of SIZES) {
    const value = read(backend, member);
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
      throw bad(member, `must be a non-negative safe integer, got ${describeValue(value)}`);
    }
    shape[member] = value;
  }
  const name = read(backend, "name");
  if (typeof name !== "string") throw bad("name", `must be a string, got ${describeValue(name)}`);
  shape.name = name;
  const platform = read(backend, "platform");
  if (!(PLATFORMS as readonly unknown[]).includes(platform)) {
    throw bad("platform", `must be one of ${PLATFORMS.join(", ")}, got ${describeValue(platform)}`);
  }
  shape.platform = platform;
  const supportsResidencySets = read(backend, "supportsResidencySets");
  if (typeof supportsResidencySets !== "boolean") {
    throw bad("supportsResidencySets", `must be a boolean, got ${describeValue(supportsResidencySets)}`);
  }
  shape.supportsResidencySets = supportsResidencySets;
  const hostVisible = read(backend, "hostVisible");
  if (hostVisible !== undefined && typeof hostVisible !== "boolean") {
    throw bad("hostVisible", `must be a boolean when given, got ${describeValue(hostVisible)}`);
  }
  if (hostVisible !== undefined) shape.hostVisible = hostVisible;
  // Address spaces: a granularity (a power of two) with all three calls, or none of them.
  const mapGranularity = read(backend, "mapGranularity");
  const spaceCalls = ["reserveAddressSpace", "mapMemory", "unmapMemory"].filter((member) => member in shape);
  if (mapGranularity !== undefined) {
    if (
      typeof mapGranularity !== "number" ||
      !Number.isSafeInteger(mapGranularity) ||
      mapGranularity <= 0 ||
      (mapGranularity & (mapGranularity - 1)) !== 0
    ) {
      throw bad("mapGranularity", `must be a power of two when given, got ${describeValue(mapGranularity)}`);
    }
    if (spaceCalls.length !== 3) {
      throw bad("mapGranularity", "is given without reserveAddressSpace, mapMemory and unmapMemory");
    }
    shape.mapGranularity = mapGranularity;
  } else {
    for (const member of spaceCalls) delete shape[member];
  }
  // CUDA's device ordinal, which a 0-byte buffer's handle names.
  const ordinal = platform === "cuda" ? read(backend, "device") : undefined;
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
