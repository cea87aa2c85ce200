// Run by hostile-native.test.ts with --harmony-rab-gsab-transfer and --expose-gc: views moved away with
// ArrayBuffer.prototype.transfer() must never reach the next owner's memory, nor memory given back to the
// system. Pattern bytes prove non-aliasing. Prints one JSON line; a crash shows as the child's signal.
import { writeFileSync } from "node:fs";
import { setImmediate as nextImmediate } from "node:timers/promises";
import { Device } from "@nuvec/device";

const MIB = 1024 ** 2;
const path = process.argv[2];
const report = {};

/** Whether every page of `view` (its first byte) reads `byte`. */
function reads(view, byte) {
  for (let index = 0; index < view.length; index += 4096) if (view[index] !== byte) return false;
  return true;
}

/** Whether `action` returns without throwing. */
function works(action) {
  try {
    action();
    return true;
  } catch {
    return false;
  }
}

async function collect() {
  for (let round = 0; round < 4; round += 1) {
    globalThis.gc();
    await nextImmediate();
  }
}

const device = Device.open();

// 1. transfer, free, malloc the same size: the moved view keeps the old bytes, the new owner keeps its own.
await (async () => {
  const first = device.malloc(MIB);
  first.bytes().fill(0xaa);
  const moved = new Uint8Array(first.contents().transfer());
  first.free();
  const second = device.malloc(MIB);
  const fresh = second.bytes();
  fresh.fill(0x55);
  moved.fill(0x11); // writes must not reach the new owner
  report.transfer = {
    movedLength: moved.length,
    movedSeesNewOwner: moved[0] === 0x55,
    newOwnerSeesMovedWrite: fresh.some((byte) => byte !== 0x55),
    cacheHits: device.counters().cacheHits,
    quarantined: device.counters().backend.quarantinedAllocations,
  };
  second.free();
})();

// 2. clearCache() and close-to-system paths with a moved view alive: no segfault when it is read afterwards.
await (async () => {
  const buffer = device.malloc(2 * MIB);
  buffer.bytes().fill(0x42);
  const moved = new Uint8Array(buffer.contents().transfer());
  buffer.free();
  device.clearCache();
  report.clearCache = { readBack: reads(moved, 0x42) };
})();

// 3. a mapped file released with a moved view alive: the view still reads the file's bytes.
await (async () => {
  writeFileSync(path, new Uint8Array(MIB).fill(0x37));
  const file = device.mapFile(path);
  const moved = new Uint8Array(file.contents().transfer());
  file.free();
  report.mappedRelease = { readBack: reads(moved, 0x37) };
})();

// 4. the safety net: a buffer dropped without free() while a moved view of it lives is not reused either.
await (async () => {
  let moved;
  (() => {
    const dropped = device.malloc(MIB);
    dropped.bytes().fill(0x66);
    moved = new Uint8Array(dropped.contents().transfer());
  })();
  const leakedBefore = device.counters().leakedBuffers;
  for (let round = 0; round < 20 && device.counters().leakedBuffers === leakedBefore; round += 1)
    await collect();
  const next = device.malloc(MIB);
  next.bytes().fill(0x77);
  report.safetyNet = {
    reclaimed: device.counters().leakedBuffers - leakedBefore,
    movedSeesNewOwner: moved[0] === 0x77,
    movedKeepsOldBytes: moved[moved.length - 1] === 0x66,
  };
  next.free();
})();

// 5. a 0-byte buffer's view transferred away detaches nobody else's.
await (async () => {
  const empty = device.malloc(0);
  const other = device.malloc(0);
  empty.contents().transfer();
  const otherWorks = works(() => other.bytes());
  const sameWorks = works(() => empty.bytes());
  const third = Device.open();
  report.empty = { otherWorks, sameWorks, otherDeviceWorks: works(() => third.malloc(0).bytes()) };
  third.close();
})();

// Each probe runs in its own function, so that its moved view is unreachable once it returns.
// Once the moved views are gone, the quarantined memory goes back to the system.
await collect();
device.close();
await collect();
const counters = device.counters().backend;
report.end = {
  quarantined: counters.quarantinedAllocations,
  liveBuffers: counters.buffersMade - counters.buffersReleased,
};
console.log(JSON.stringify(report));
