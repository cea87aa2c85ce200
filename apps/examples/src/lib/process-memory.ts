// The operating system's own figures for this process (Linux /proc; undefined elsewhere).
import { readFileSync, writeFileSync } from "node:fs";

/** Resident and locked memory of this process, in bytes, as the kernel reports them. */
export interface ProcessMemory {
  /** Resident set size now (VmRSS). */
  resident: number;
  /** Peak resident set size since start or the last {@link resetProcessPeak} (VmHWM). */
  peakResident: number;
  /** Locked (wired) memory now (VmLck). */
  locked: number;
  /** Resident anonymous memory (RssAnon): what the process holds that is not file-backed. */
  residentAnonymous: number;
  /** Resident file-backed memory (RssFile): mapped files among it. */
  residentFile: number;
}

/** Reads /proc/self/status; `undefined` where it does not exist (macOS). */
export function processMemory(): ProcessMemory | undefined {
  let text: string;
  try {
    text = readFileSync("/proc/self/status", "utf8");
  } catch {
    return undefined;
  }
  const field = (name: string): number => {
    const match = text.match(new RegExp(`^${name}:\\s+(\\d+) kB`, "m"));
    return match ? Number(match[1]) * 1024 : 0;
  };
  return {
    resident: field("VmRSS"),
    peakResident: field("VmHWM"),
    locked: field("VmLck"),
    residentAnonymous: field("RssAnon"),
    residentFile: field("RssFile"),
  };
}

/** Resets the kernel's peak resident size to the current one (`echo 5 > /proc/self/clear_refs`). */
export function resetProcessPeak(): boolean {
  try {
    writeFileSync("/proc/self/clear_refs", "5");
    return true;
  } catch {
    return false;
  }
}
