// Helpers of the host tests: what /proc says about this process.
import { readFileSync } from "node:fs";

/** A field of /proc/self/status in bytes (`VmLck`, `VmRSS`, …). */
export function statusBytes(field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync("/proc/self/status", "utf8"));
  if (!match?.[1]) throw new Error(`no ${field} in /proc/self/status`);
  return Number(match[1]) * 1024;
}

/** Bytes locked by this process (`VmLck`). */
export function lockedBytes(): number {
  return statusBytes("VmLck");
}

/** Whether this process may lock memory past RLIMIT_MEMLOCK (CAP_IPC_LOCK, bit 14 of CapEff; root has it). */
export function canLockWithoutLimit(): boolean {
  const match = /^CapEff:\s+([0-9a-f]+)/m.exec(readFileSync("/proc/self/status", "utf8"));
  return match?.[1] !== undefined && (BigInt(`0x${match[1]}`) & (1n << 14n)) !== 0n;
}

/** The soft RLIMIT_MEMLOCK in bytes, or `Infinity`. */
export function lockLimit(): number {
  const match = /^Max locked memory\s+(\S+)/m.exec(readFileSync("/proc/self/limits", "utf8"));
  return match?.[1] === undefined || match[1] === "unlimited" ? Number.POSITIVE_INFINITY : Number(match[1]);
}

// V8 (Node 20, 64-bit) takes its heap in 256 KiB pages at random 256 KiB-aligned addresses, and a busy test
// grows its heap by dozens of them: noise for a leak check of our own mappings.
const V8_PAGE = 256 * 1024;

/** One line of /proc/self/maps: its address range, permissions and path (empty for anonymous memory). */
export interface MappingLine {
  start: number;
  end: number;
  permissions: string;
  path: string;
  text: string;
}

/**
 * The lines of /proc/self/maps other than V8's heap pages (anonymous, exactly 256 KiB, 256 KiB-aligned). One of
 * our buffers could look like one only by chance.
 */
export function mappingsWithoutV8Heap(): MappingLine[] {
  const lines: MappingLine[] = [];
  for (const text of readFileSync("/proc/self/maps", "utf8").trimEnd().split("\n")) {
    const match = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(text);
    if (!match?.[1] || !match[2] || !match[3]) continue;
    const start = Number.parseInt(match[1], 16);
    const end = Number.parseInt(match[2], 16);
    const path = match[4] ?? "";
    if (path === "" && end - start === V8_PAGE && start % V8_PAGE === 0) continue;
    lines.push({ start, end, permissions: match[3], path, text });
  }
  return lines;
}

/** Number of mappings of this process other than V8's heap pages. */
export function mappingCountWithoutV8Heap(): number {
  return mappingsWithoutV8Heap().length;
}

/** Bytes of this process's writable anonymous mappings other than V8's heap pages (where leaked buffers would be). */
export function writableAnonymousBytesWithoutV8Heap(): number {
  let bytes = 0;
  for (const line of mappingsWithoutV8Heap()) {
    if (line.path === "" && line.permissions.startsWith("rw")) bytes += line.end - line.start;
  }
  return bytes;
}
