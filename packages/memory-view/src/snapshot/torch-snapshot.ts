// Reads a PyTorch CUDA memory snapshot (`torch.cuda.memory._dump_snapshot("x.pickle")` after
// `_record_memory_history()`) into a nuvec trace: one device's allocations and frees become "a"/"f" events,
// each allocation keeps its stack frames as a label, and PyTorch's own reserved memory (its segments) becomes
// a series on the same event axis.
//
// The pickle is read by the project's own reader of the opcodes a snapshot holds (snapshot-pickle.ts): plain
// data only, every other opcode and every global but `collections.OrderedDict` refused, and its memory and
// time bounded in proportion to the input's length. A gzipped snapshot is inflated only up to a bound set by
// its compressed length, so a small file that inflates to gigabytes is refused early.
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { basename } from "node:path";
import { gunzipSync } from "node:zlib";
import { FormatError } from "@nuvec/allocator";
import { PickleRefusal, readSnapshotPickle } from "./snapshot-pickle.js";

/** The largest snapshot read (the file, or what a gzipped one inflates to). */
export const MAX_SNAPSHOT_BYTES = 1024 ** 3;
/**
 * What a gzipped snapshot may inflate to: this many times its compressed length (real snapshots inflate 12 to
 * 15 times), or {@link INFLATED_FLOOR_BYTES}, whichever is more.
 */
export const MAX_INFLATION = 64;
export const INFLATED_FLOOR_BYTES = 16 * 1024 * 1024;
/** Frames kept per allocation label, and characters per frame field. */
const FRAMES_KEPT = 8;
const FIELD_CHARACTERS = 240;
/**
 * The characters of distinct labels a snapshot may make: one per byte of pickle above a floor (the snapshots
 * PyTorch recorded make 0.006 to 0.023). A label is made of the pickle's strings, so without this bound a
 * pickle of a few bytes per allocation (frames shared through the memo, in ever new orders) could make
 * kilobytes of labels for each.
 */
const LABEL_CHARACTERS_FLOOR = 8 * 1024 * 1024;

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

/** The field `key` of a dict read from the pickle (a Map; anything else has no fields). */
function field(value: unknown, key: string): unknown {
  return value instanceof Map ? value.get(key) : undefined;
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
    // Opened without blocking and checked by its descriptor: only a regular file is read (a FIFO never blocks
    // the program); the trace reader refuses what is not a file anyway.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    if (!fstatSync(fd).isFile()) return false;
    const head = Buffer.alloc(2);
    readSync(fd, head, 0, 2, 0);
    return head[0] === 0x80 && (head[1] as number) >= 2 && (head[1] as number) <= 5;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The raw pickle bytes of `path` (inflated if gzipped), within `limit` bytes. The file is opened without
 * blocking and checked by its descriptor, so a FIFO or a device put in its place after a check is refused,
 * never read.
 */
function readBytes(path: string, limit: number): Buffer {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw new FormatError("ERR_NUVEC_TRACE_NOT_FOUND", `cannot read ${path}: ${(error as Error).message}`);
  }
  let bytes: Buffer;
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) {
      throw new FormatError("ERR_NUVEC_TRACE_NOT_A_FILE", `${path} is not a regular file`);
    }
    if (stats.size > limit) {
      throw new FormatError("ERR_NUVEC_TRACE_TOO_LARGE", `${path} is ${stats.size} bytes, over ${limit}`);
    }
    // The length fstat gave, no more: a file that grows meanwhile is read as it was.
    bytes = Buffer.allocUnsafe(stats.size);
    let filled = 0;
    while (filled < bytes.length) {
      const read = readSync(fd, bytes, filled, bytes.length - filled, filled);
      if (read === 0) break;
      filled += read;
    }
    bytes = bytes.subarray(0, filled);
  } catch (error) {
    if (error instanceof FormatError) throw error;
    throw new FormatError("ERR_NUVEC_TRACE_NOT_FOUND", `cannot read ${path}: ${(error as Error).message}`);
  } finally {
    closeSync(fd);
  }
  if (bytes[0] !== 0x1f || bytes[1] !== 0x8b) return bytes;
  // Inflated only up to a bound of the compressed length: a small file that inflates without end (a gzip
  // bomb) stops there, having used no more memory or time than the bound.
  const bound = Math.min(limit, Math.max(INFLATED_FLOOR_BYTES, MAX_INFLATION * bytes.length));
  try {
    return gunzipSync(bytes, { maxOutputLength: bound });
  } catch (error) {
    if ((error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") {
      throw new FormatError(
        "ERR_NUVEC_TRACE_TOO_LARGE",
        `${path} inflates to more than ${bound} bytes (${bytes.length} compressed; a snapshot inflates at most ${MAX_INFLATION} times, or to ${INFLATED_FLOOR_BYTES} bytes${bound === limit ? `; the limit is ${limit}` : ""})`,
      );
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
 * @throws FormatError: `ERR_NUVEC_TRACE_CORRUPT` for anything but a well-formed snapshot (a truncated file, an
 * opcode a snapshot never holds, a global but `collections.OrderedDict`, an integer longer than 8 bytes, a
 * string longer than 64 KiB, more values than a snapshot of its length holds, a trace entry of the wrong
 * shape); `ERR_NUVEC_TRACE_TOO_LARGE` past `maxBytes` or a gzip that inflates past its bound; `ERR_NUVEC_TRACE_EMPTY`
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
    root = readSnapshotPickle(bytes);
  } catch (error) {
    if (error instanceof PickleRefusal) throw corrupt(path, error.message);
    throw error;
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
  const labelOfFrames = new Map<unknown[], number>();
  /** A label's index into `labels` (added when new); -1 for no label. */
  const labelBudget = LABEL_CHARACTERS_FLOOR + bytes.length;
  let labelCharacters = 0;
  const internLabel = (label: string): number => {
    if (label === "") return -1;
    let index = labelOf.get(label);
    if (index === undefined) {
      labelCharacters += label.length;
      if (labelCharacters > labelBudget) {
        throw corrupt(
          path,
          `its stacks make more than ${labelBudget} characters of distinct labels (one a byte of pickle, above ${LABEL_CHARACTERS_FLOOR})`,
        );
      }
      index = labels.length;
      labelOf.set(label, index);
      labels.push(label);
    }
    return index;
  };
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
      // A frames list shared by many entries (one memo entry) is labelled once: a container of the pickle
      // never changes once nested, so its label stays true.
      const frames = field(entry, "frames");
      let labelIndex = Array.isArray(frames) ? labelOfFrames.get(frames) : undefined;
      if (labelIndex === undefined) {
        labelIndex = internLabel(frameLabel(frames));
        if (Array.isArray(frames) && frames.length > 0) labelOfFrames.set(frames, labelIndex);
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
