// `Device.open`'s `metal` option: the runtime's command queue and GPU, checked against the backend before the
// Device makes anything on it.
import type { NativeBackend } from "@nuvec/metal-native";
import { ArgumentError } from "@nuvec/stats";
import type { MetalOptions } from "./options.js";

/** Checks one pointer of the `metal` option: a bigint in (0, 2^64). */
function checkPointerOption(value: unknown, name: string): void {
  if (value === undefined) return;
  if (typeof value !== "bigint" || value <= 0n || value >= 1n << 64n) {
    throw new ArgumentError(
      name,
      `Device.open(): ${name} must be a non-zero 64-bit pointer given as a bigint`,
    );
  }
}

/**
 * Checks `Device.open`'s `metal` option against the backend: pointers well-formed, the backend a Metal one
 * (anything else is refused, naming the options given), and the runtime's device the backend's GPU.
 */
export function checkMetalOptions(metal: unknown, backend: NativeBackend): void {
  if (metal === null || typeof metal !== "object") {
    throw new ArgumentError("metal", "Device.open(options): metal must be an object");
  }
  const { commandQueue, device } = metal as MetalOptions;
  checkPointerOption(commandQueue, "metal.commandQueue");
  checkPointerOption(device, "metal.device");
  const given = [
    ...(commandQueue === undefined ? [] : ["metal.commandQueue"]),
    ...(device === undefined ? [] : ["metal.device"]),
  ];
  if (given.length === 0) return;
  if (backend.platform !== "metal") {
    throw new ArgumentError(
      given[0] as string,
      `Device.open(): ${given.join(" and ")} ${given.length > 1 ? "are" : "is"} for the Metal backend; ` +
        `this device runs on the ${backend.platform} backend, which has no Metal queue or device`,
    );
  }
  if (device === undefined) return;
  if (backend.checkMetalDevice === undefined) {
    throw new ArgumentError("metal.device", "Device.open(): this Metal backend cannot check a device");
  }
  try {
    backend.checkMetalDevice(device);
  } catch (error) {
    throw new ArgumentError("metal.device", `Device.open(): metal.device: ${(error as Error).message}`, {
      cause: error,
    });
  }
}
