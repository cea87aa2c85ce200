// Reads a PyTorch CUDA memory snapshot (`torch.cuda.memory._dump_snapshot("x.pickle")` after
// `_record_memory_history()`) into a nuvec trace: one device's allocations and frees become "a"/"f" events,
// each allocation keeps its stack frames as a label, and PyTorch's own reserved memory (its segments) becomes
// a series on the same event axis.
//
// The pickle is read by pickleparser with a restricted resolver: a snapshot is plain data (dicts, lists,
// strings, numbers), so every global a pickle names is refused except `collections.OrderedDict` (built as a
// plain Map). No pickle can call anything: REDUCE, INST, OBJ and NEWOBJ only ever reach that one constructor.
import { closeSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { basename } from "node:path";
import { gunzipSync } from "node:zlib";
import { FormatError } from "@nuvec/allocator";

/** The largest snapshot read (the file, or what a gzipped one inflates to). */
export const MAX_SNAPSHOT_BYTES = 1024 ** 3;
/** The longest byte string a snapshot may hold (it holds none: this bounds a hostile LONG4 or BINBYTES). */
const MAX_BYTES_OBJECT = 64 * 1024;
/** Frames kept per allocation label, and characters per frame field. */
const FRAMES_KEPT = 8;
const FIELD_CHARACTERS = 240;

interface PickleReader {
  bytes(length: number): Uint8Array;
}
interface PickleModule {
  BufferReader: new (buffer: Uint8Array) => PickleReader;
  Parser: new (options: object) => { read(reader: PickleReader): unknown };
}
const pickleparser = createRequire(import.meta.url)("pickleparser") as PickleModule;

/** A BufferReader that refuses byte strings longer than a snapshot ever holds. */
class BoundedReader extends pickleparser.BufferReader {
  override bytes(length: number): Uint8Array {
    if (!(length <= MAX_BYTES_OBJECT)) {
      throw new Error(`a byte string or integer of ${length} bytes (a memory snapshot holds none this long)`);
    }
    return super.bytes(length);
  }
}

/** `collections.OrderedDict`, the one global a snapshot may name: a plain Map, whatever the arguments. */
function orderedDict(): Map<unknown, unknown> {
  return new Map();
}

function refuse(what: string): never {
  throw new Error(`${what} (a memory snapshot is plain data)`);
}

const PARSER_OPTIONS = {
  nameResolver: {
    resolve(module: unknown, name: unknown) {
      if (module === "collections" && name === "OrderedDict") return orderedDict;
      return refuse(`refused the global ${String(module).slice(0, 80)}.${String(name).slice(0, 80)}`);
    },
  },
  persistentResolver: { resolve: () => refuse("refused a persistent id") },
  extensionResolver: { resolve: () => refuse("refused an extension code") },
  unpicklingTypeOfSet: "array",
  unpicklingTypeOfDictionary: "Map",
};

/** What one snapshot becomes. */
export interface TorchWorkload {
  /** The device whose trace this is, and every device that has one. */
  device: number;
  devices: number[];
  /** A header object, then the nuvec events. */
  items: unknown[];
  /** Allocation labels (stack frames, innermost first), and each allocation's index into them. */
  labels: string[];
  allocationLabels: Int32Array;
  /** PyTorch's reserved memory (its segments) from event `at[k]` on. */
  reserved: { at: Uint32Array; value: Float64Array };
  /** What the snapshot's trace held. */
  counts: {
    allocations: number;
    frees: number;
    /** Frees of blocks allocated before recording began: counted and skipped. */
    skippedFrees: number;
    liveAtEnd: number;
    segmentAllocs: number;
    segmentFrees: number;
    /** Entries of other kinds (free_requested when free_completed is there, oom, snapshot, …). */
    otherEntries: number;
  };
  /** PyTorch's reserved bytes at the start of recording and at its peak. */
  reservedAtStart: number;
  peakReserved: number;
}

function corrupt(path: string, why: string): FormatError {
  return new FormatError(
    "ERR_NUVEC_TRACE_CORRUPT",
    `${path} is not a readable PyTorch memory snapshot: ${why}`,
  );
}

/** The field `key` of a dict read from the pickle (a Map; a protocol-0 DICT may set own properties). */
function field(value: unknown, key: string): unknown {
  if (value instanceof Map) return value.get(key);
  if (typeof value === "object" && value !== null && Object.hasOwn(value, key)) {
    return (value as Record<string, unknown>)[key];
  }
  return undefined;
}

/** A whole number of bytes or an address from the pickle (an int, or a bigint within safe range). */
function integer(value: unknown): number | undefined {
  const number = typeof value === "bigint" ? Number(value) : value;
  return typeof number === "number" && Number.isSafeInteger(number) && number >= 0 ? number : undefined;
}

/** True when `path` names a PyTorch snapshot: by its name, or by a pickle's first byte. */
export function looksLikeTorchSnapshot(path: string): boolean {
  if (/\.(pickle|pkl)(\.gz)?$/i.test(path)) return true;
  let fd: number | undefined;
  try {
    // Only a regular file is opened: a FIFO would block, and the trace reader refuses it anyway.
    if (!statSync(path).isFile()) return false;
    fd = openSync(path, "r");
    const head = Buffer.alloc(2);
    readSync(fd, head, 0, 2, 0);
    return head[0] === 0x80 && (head[1] as number) >= 2 && (head[1] as number) <= 5;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The raw pickle bytes of `path` (inflated if gzipped), within `limit` bytes. */
function readBytes(path: string, limit: number): Buffer {
  let size: number;
  try {
    const stats = statSync(path);
    if (!stats.isFile()) {
      throw new FormatError("ERR_NUVEC_TRACE_NOT_A_FILE", `${path} is not a regular file`);
    }
    size = stats.size;
  } catch (error) {
    if (error instanceof FormatError) throw error;
    throw new FormatError("ERR_NUVEC_TRACE_NOT_FOUND", `cannot read ${path}: ${(error as Error).message}`);
  }
  if (size > limit) {
    throw new FormatError("ERR_NUVEC_TRACE_TOO_LARGE", `${path} is ${size} bytes, over ${limit}`);
  }
  const bytes = readFileSync(path);
  if (bytes[0] !== 0x1f || bytes[1] !== 0x8b) return bytes;
  try {
    // Inflated only up to the limit: a small file that inflates without end (a gzip bomb) stops there.
    return gunzipSync(bytes, { maxOutputLength: limit });
  } catch (error) {
    if ((error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") {
      throw new FormatError("ERR_NUVEC_TRACE_TOO_LARGE", `${path} inflates to more than ${limit} bytes`);
    }
    throw corrupt(path, `bad gzip data (${(error as Error).message})`);
  }
}

/** One frame as a line: `name (file:line)`, each field cut to a bounded length. */
function frameLine(frame: unknown): string | undefined {
  const name = field(frame, "name");
  const file = field(frame, "filename");
  const line = field(frame, "line");
  if (typeof name !== "string" || typeof file !== "string") return undefined;
  return `${name.slice(0, FIELD_CHARACTERS)} (${file.slice(-FIELD_CHARACTERS)}${typeof line === "number" ? `:${line}` : ""})`;
}

/**
 * The label of one allocation, innermost first, one frame a line: the innermost Python frame (the operation
 * that allocated), then the innermost frames outside the torch package (the user's code), up to
 * {@link FRAMES_KEPT} lines. A stack without Python frames (C++ only) keeps its innermost frames.
 */
function frameLabel(frames: unknown): string {
  if (!Array.isArray(frames)) return "";
  const lines: string[] = [];
  const scanned = Math.min(frames.length, 256);
  let python = false;
  for (let index = 0; index < scanned && lines.length < FRAMES_KEPT; index += 1) {
    const file = field(frames[index], "filename");
    if (typeof file !== "string" || !file.endsWith(".py")) continue;
    if (python && /[\\/]torch[\\/]/.test(file)) continue;
    const line = frameLine(frames[index]);
    if (line === undefined) continue;
    lines.push(line);
    python = true;
  }
  if (lines.length === 0) {
    for (let index = 0; index < scanned && lines.length < FRAMES_KEPT; index += 1) {
      const line = frameLine(frames[index]);
      if (line !== undefined) lines.push(line);
    }
  }
  return lines.join("\n");
}

/**
 * Reads the snapshot at `path` (a pickle, or a gzipped one) into a nuvec trace of device `device` (default:
 * the device with the most trace entries). `maxBytes` (default {@link MAX_SNAPSHOT_BYTES}) bounds the file
 * and what a gzipped one inflates to.
 *
 * @throws FormatError: `ERR_NUVEC_TRACE_CORRUPT` for anything but a well-formed snapshot (a truncated file, a
 * pickle naming any global but `collections.OrderedDict`, a byte string longer than 64 KiB, a trace entry
 * of the wrong shape); `ERR_NUVEC_TRACE_TOO_LARGE` past `maxBytes`; `ERR_NUVEC_TRACE_EMPTY`
 * when the device's trace has no allocation; `ERR_NUVEC_TRACE_NOT_FOUND` / `ERR_NUVEC_TRACE_NOT_A_FILE`.
 */
export function readTorchSnapshot(
  path: string,
  options: { device?: number; maxBytes?: number } = {},
): TorchWorkload {
  const bytes = readBytes(path, options.maxBytes ?? MAX_SNAPSHOT_BYTES);
  if (bytes[0] !== 0x80 || (bytes[1] as number) < 2 || (bytes[1] as number) > 5) {
    throw corrupt(path, "it does not start as a pickle of protocol 2 to 5");
  }
  let root: unknown;
  try {
    const parser = new pickleparser.Parser(PARSER_OPTIONS);
    root = parser.read(new BoundedReader(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length)));
  } catch (error) {
    throw corrupt(path, String((error as Error)?.message ?? error).split("\n")[0] as string);
  }
  const traces = field(root, "device_traces");
  if (!Array.isArray(traces)) throw corrupt(path, "it has no device_traces list");
  const devices: number[] = [];
  traces.forEach((trace, index) => {
    if (Array.isArray(trace) && trace.length > 0) devices.push(index);
  });
  let device = options.device;
  if (device === undefined) {
    let most = -1;
    for (const index of devices) {
      const length = (traces[index] as unknown[]).length;
      if (length > most) {
        most = length;
        device = index;
      }
    }
  }
  const entries = device === undefined ? undefined : traces[device];
  if (device === undefined || !Array.isArray(entries) || entries.length === 0) {
    throw new FormatError(
      "ERR_NUVEC_TRACE_EMPTY",
      `${path}: ${device === undefined ? "no device has" : `device ${device} has no`} trace entries (devices with some: ${devices.join(", ") || "none"}); was _record_memory_history() called before the workload?`,
    );
  }

  // free_completed marks memory PyTorch can reuse; a snapshot without any (older PyTorch) has free_requested
  // or free only.
  let hasCompleted = false;
  for (const entry of entries) if (field(entry, "action") === "free_completed") hasCompleted = true;

  const events: unknown[] = [];
  const labelOf = new Map<string, number>();
  const labels: string[] = [];
  const allocationLabels: number[] = [];
  const live = new Map<unknown, number>();
  const reservedAt: number[] = [];
  const reservedChange: number[] = [];
  const counts = {
    allocations: 0,
    frees: 0,
    skippedFrees: 0,
    liveAtEnd: 0,
    segmentAllocs: 0,
    segmentFrees: 0,
    otherEntries: 0,
  };
  let nextId = 0;
  entries.forEach((entry, index) => {
    const action = field(entry, "action");
    if (typeof action !== "string")
      throw corrupt(path, `trace entry ${index} of device ${device} has no action`);
    const isFree =
      action === "free_completed" || action === "free" || (!hasCompleted && action === "free_requested");
    const isSegment =
      action === "segment_alloc" ||
      action === "segment_map" ||
      action === "segment_free" ||
      action === "segment_unmap";
    if (action !== "alloc" && !isFree && !isSegment) {
      counts.otherEntries += 1;
      return;
    }
    const addressValue = field(entry, "addr");
    const address = typeof addressValue === "bigint" ? addressValue : integer(addressValue);
    const size = integer(field(entry, "size"));
    if (address === undefined || size === undefined) {
      throw corrupt(path, `trace entry ${index} (${action}) of device ${device} has no whole addr and size`);
    }
    if (isSegment) {
      const grows = action === "segment_alloc" || action === "segment_map";
      reservedAt.push(events.length);
      reservedChange.push(grows ? size : -size);
      if (grows) counts.segmentAllocs += 1;
      else counts.segmentFrees += 1;
      return;
    }
    if (action === "alloc") {
      if (live.has(address)) {
        throw corrupt(path, `trace entry ${index}: an alloc at address ${address} that is already allocated`);
      }
      const id = nextId;
      nextId += 1;
      live.set(address, id);
      events.push(["a", id, size]);
      const label = frameLabel(field(entry, "frames"));
      let labelIndex = -1;
      if (label !== "") {
        labelIndex = labelOf.get(label) ?? labels.length;
        if (labelIndex === labels.length) {
          labelOf.set(label, labelIndex);
          labels.push(label);
        }
      }
      allocationLabels.push(labelIndex);
      counts.allocations += 1;
      return;
    }
    const id = live.get(address);
    if (id === undefined) {
      counts.skippedFrees += 1;
      return;
    }
    live.delete(address);
    events.push(["f", id]);
    counts.frees += 1;
  });
  counts.liveAtEnd = live.size;
  if (events.length === 0) {
    throw new FormatError("ERR_NUVEC_TRACE_EMPTY", `${path}: device ${device}'s trace has no allocation`);
  }

  // PyTorch's reserved memory: what its segments of this device hold when the snapshot was taken, less what
  // the trace's segment events changed, is what it held when recording began.
  let atEnd = 0;
  const segments = field(root, "segments");
  if (Array.isArray(segments)) {
    for (const segment of segments) {
      if (integer(field(segment, "device")) === device) atEnd += integer(field(segment, "total_size")) ?? 0;
    }
  }
  let net = 0;
  for (const change of reservedChange) net += change;
  const reservedAtStart = Math.max(0, atEnd - net);
  const at: number[] = [0];
  const value: number[] = [reservedAtStart];
  let reserved = reservedAtStart;
  reservedChange.forEach((change, index) => {
    reserved = Math.max(0, reserved + change);
    // A change after the last event shows on the last one (the state the snapshot ends in).
    const event = Math.min(reservedAt[index] as number, events.length - 1);
    if (at[at.length - 1] === event) value[value.length - 1] = reserved;
    else {
      at.push(event);
      value.push(reserved);
    }
  });

  // The peak of what is drawn: one value per event, the last change at each.
  let peakReserved = 0;
  for (const bytes of value) peakReserved = Math.max(peakReserved, bytes);

  const header = {
    name: basename(path)
      .replace(/\.gz$/i, "")
      .replace(/\.(pickle|pkl)$/i, ""),
    workload: `PyTorch memory snapshot, device ${device}`,
    source: "torch.cuda.memory._dump_snapshot",
    events: events.length,
    allocations: counts.allocations,
    live_at_end: counts.liveAtEnd,
  };
  return {
    device,
    devices,
    items: [header, ...events],
    labels,
    allocationLabels: Int32Array.from(allocationLabels),
    reserved: { at: Uint32Array.from(at), value: Float64Array.from(value) },
    counts,
    reservedAtStart,
    peakReserved,
  };
}
