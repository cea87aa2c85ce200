// The look-alike handles of the bad input catalogue: objects that pass `instanceof` but are no handle a Device
// made, given to every entry point that takes a handle and used as the `this` of every method and getter.
// Apart from the other cases because they are built from the classes' prototypes, not from a table.
import { expect } from "vitest";
import { Device, DeviceBuffer, DeviceNative, MappedFile, mapSafetensors } from "../../src/index.js";
import { type Case, type Context, invalid, paths } from "./bad-input-support.js";

/**
 * Objects that pass `instanceof` but are no handle a Device made, of each class a Device user is handed:
 * `Object.create` of the prototype, a Proxy of a real one, a structuredClone of a real one (a plain object).
 */
function lookAlikesOf<T extends object>(
  noun: string,
  prototype: object,
  real: (context: Context) => T,
): [string, (context: Context) => unknown][] {
  return [
    [`Object.create(${noun}.prototype)`, () => Object.create(prototype)],
    [`a Proxy of a ${noun}`, (context) => new Proxy(real(context), {})],
    [`a structuredClone of a ${noun}`, (context) => structuredClone(real(context))],
  ];
}

/** Every method and getter of `prototype` (its own members, symbols too), each called on a given `this`. */
function membersOf(prototype: object): [string, (self: unknown) => unknown][] {
  return Reflect.ownKeys(prototype)
    .filter((key) => key !== "constructor")
    .map((key) => {
      const member = Object.getOwnPropertyDescriptor(prototype, key) as PropertyDescriptor;
      const call = (member.get ?? member.value) as (this: unknown) => unknown;
      return [String(key), (self: unknown) => call.call(self)];
    });
}

/**
 * Look-alike handles: every entry point that takes a buffer, a mapped file or a Device, and every method and
 * getter of those classes called on a look-alike `this`, refused with an ArgumentError naming the argument.
 */
export function lookAlikeCases(): Case[] {
  const cases: Case[] = [];
  const buffers = lookAlikesOf("DeviceBuffer", DeviceBuffer.prototype, ({ device }) => device.malloc(1000));
  const files = lookAlikesOf("MappedFile", MappedFile.prototype, ({ device }) => device.mapFile(paths.file));
  const devices = lookAlikesOf("Device", Device.prototype, ({ device }) => device);
  const natives = lookAlikesOf("DeviceNative", DeviceNative.prototype, ({ device }) => device.native);
  const foreign = invalid("handle", "ERR_NUVEC_FOREIGN_BUFFER");
  const another: [string, (context: Context) => unknown][] = [
    ["another device's buffer", ({ other }) => other.malloc(1000)],
    ["another device's file", ({ other }) => other.mapFile(paths.file)],
  ];
  for (const [kind, make] of [...buffers, ...files]) {
    const act = (call: (held: unknown, device: Device) => unknown) => (context: Context) => {
      const held = make(context);
      return () => call(held, context.device);
    };
    cases.push(
      {
        name: `free(${kind})`,
        act: act((held, device) => device.free(held as never)),
        error: invalid("handle"),
      },
      {
        name: `native.handle(${kind})`,
        act: act((held, device) => device.native.handle(held as never)),
        error: invalid("target"),
      },
    );
  }
  for (const [kind, make] of another) {
    cases.push({
      name: `native.handle(${kind})`,
      act: (context) => {
        const held = make(context);
        return () => context.device.native.handle(held as never);
      },
      error: foreign,
    });
  }
  for (const [kind, make] of devices) {
    cases.push({
      name: `mapSafetensors(${kind})`,
      act: (context) => {
        const device = make(context);
        return () => mapSafetensors(device as never, paths.file);
      },
      error: invalid("device"),
    });
  }
  for (const [prototype, kinds] of [
    [DeviceBuffer.prototype, buffers],
    [MappedFile.prototype, files],
    [Device.prototype, devices],
    [DeviceNative.prototype, natives],
  ] as const) {
    for (const [member, call] of membersOf(prototype)) {
      for (const [kind, make] of kinds) {
        cases.push({
          name: `${member} on ${kind}`,
          act: (context) => {
            const self = make(context);
            return () => call(self);
          },
          error: {
            ...invalid("this"),
            message: expect.stringContaining("not an object that looks like one"),
          },
        });
      }
    }
  }
  return cases;
}
