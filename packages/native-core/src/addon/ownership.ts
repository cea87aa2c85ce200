import { ArgumentError } from "@nuvec/stats";
import { AddonAllocation, isAddonAllocation } from "./allocation.js";
import { AddonBuffer } from "./buffer.js";
import { AddonMappedFile } from "./mapped-file.js";
import type { AddonOwner } from "./owner.js";
import type { RawAllocationHandle } from "./raw.js";

/** What an argument that takes an allocation of a backend may be. */
export type AllocationKind = "buffer" | "mapped file" | "buffer or mapped file";

/** The wrapper class each kind is. */
const CLASS_OF_KIND = {
  buffer: AddonBuffer,
  "mapped file": AddonMappedFile,
  "buffer or mapped file": AddonAllocation,
} as const;

/**
 * The addon handle of `value` when it is a `kind` that `owner` made, else a `ArgumentError`
 * naming `argument` (`"<method>(): the <argument> must be a <kind> of this backend"`): the one check that an
 * allocation handed to a backend, or to one of its residency sets, is its own.
 */
export function ownedHandle(
  owner: AddonOwner,
  value: unknown,
  kind: AllocationKind,
  argument: string,
  method: string,
): RawAllocationHandle {
  // The brand first: a Proxy of a real allocation passes `instanceof` and forwards `owner`.
  if (isAddonAllocation(value) && value instanceof CLASS_OF_KIND[kind] && value.owner === owner)
    return value.raw;
  throw new ArgumentError(argument, `${method}(): the ${argument} must be a ${kind} of this backend`);
}
