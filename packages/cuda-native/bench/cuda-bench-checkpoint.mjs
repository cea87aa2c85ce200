// Section 3 of the CUDA bench (cuda-bench.mjs): a mapped checkpoint copied to device memory from pageable
// pages and from the wired mapping, in GB/s, after timing how fast the file is written and faulted in, on
// tmpfs and on disk. Apart from the allocator's sections: this one measures bandwidth, not calls.
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { backend, checkpointDirs, GIB, MIB, median, quick, results, save } from "./cuda-bench-setup.mjs";

function gbps(bytes, milliseconds) {
  return bytes / (milliseconds / 1000) / 1e9;
}

function timeMs(body) {
  const start = performance.now();
  body();
  return performance.now() - start;
}

/** Writes `bytes` in 64 MiB chunks and fsyncs; gives up after `budgetMs` (a slow disk), saying how far it got. */
function writeFile(path, bytes, budgetMs) {
  const chunk = new Uint8Array(64 * MIB);
  for (let index = 0; index < chunk.length; index += 4096) chunk[index] = (index >>> 12) & 0xff;
  const descriptor = openSync(path, "w");
  const start = performance.now();
  let written = 0;
  try {
    while (written < bytes && performance.now() - start < budgetMs) {
      written += writeSync(descriptor, chunk, 0, Math.min(chunk.length, bytes - written));
    }
    const writtenMs = performance.now() - start;
    fsyncSync(descriptor);
    const syncedMs = performance.now() - start;
    return { written, writtenMs, syncedMs, complete: written === bytes };
  } finally {
    closeSync(descriptor);
  }
}

/** Section 3: a checkpoint written, faulted in and copied to device memory from pageable and wired pages, per folder. */
export function checkpoint() {
  const bytes = quick ? 256 * MIB : GIB;
  const rows = [];
  for (const base of checkpointDirs) {
    let directory;
    try {
      directory = mkdtempSync(join(base, "nuvec-checkpoint-"));
    } catch (error) {
      rows.push({ where: base, error: String(error.message) });
      continue;
    }
    const path = join(directory, "checkpoint.bin");
    const row = { where: base, bytes };
    results.checkpoint = rows;
    rows.push(row);
    try {
      const write = writeFile(path, bytes, 60_000);
      row.writeMBps = write.written / (write.writtenMs / 1000) / 1e6;
      row.writeAndSyncMBps = write.written / (write.syncedMs / 1000) / 1e6;
      row.writeComplete = write.complete;
      if (!write.complete) {
        row.note = `wrote only ${(write.written / MIB).toFixed(0)} MiB in 60 s`;
        save();
        continue;
      }
      const mapping = backend.mapFile(path);
      const view = new Uint8Array(mapping.contents());
      // Fault every page in (what MAP_POPULATE would do), reading one byte per 4 KiB.
      let sum = 0;
      row.faultInMs = timeMs(() => {
        for (let offset = 0; offset < view.length; offset += 4096) sum += view[offset];
      });
      row.checksum = sum;
      const buffer = backend.newBuffer(mapping.length);
      buffer.write(view); // warm-up (and the device pages)
      row.pageableGBps = median(
        [0, 1, 2].map(() =>
          gbps(
            bytes,
            timeMs(() => buffer.write(view)),
          ),
        ),
      );
      save();
      console.log(`${base}: pageable copy ${row.pageableGBps.toFixed(2)} GB/s; registering the mapping…`);
      const set = backend.newResidencySet();
      set.add(mapping);
      set.commit();
      row.registerMs = timeMs(() => set.requestResidency());
      row.wiringFailures = set.wiringFailures;
      save();
      row.lastWiringError = set.lastWiringError;
      if (set.wiringFailures === 0) {
        row.registeredGBps = median(
          [0, 1, 2].map(() =>
            gbps(
              bytes,
              timeMs(() => buffer.write(view)),
            ),
          ),
        );
        row.devicePointerGBps = median(
          [0, 1, 2].map(() =>
            gbps(
              bytes,
              timeMs(() => backend.copyFromMapping(buffer, mapping)),
            ),
          ),
        );
        const check = buffer.read(bytes - 4096, 4096);
        row.copyCorrect = check.every((value, index) => value === view[bytes - 4096 + index]);
      }
      row.unregisterMs = timeMs(() => set.endResidency());
      set.release();
      buffer.release();
      mapping.release();
    } catch (error) {
      row.error = String(error.message);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
    save();
  }
  console.log(`\n${bytes / MIB} MiB mapped checkpoint → device memory`);
  console.table(
    rows.map((row) => ({
      where: row.where,
      "write MB/s": row.writeMBps?.toFixed(0),
      "write+fsync MB/s": row.writeAndSyncMBps?.toFixed(0),
      "fault-in ms": row.faultInMs?.toFixed(0),
      "pageable GB/s": row.pageableGBps?.toFixed(2),
      "register ms": row.registerMs?.toFixed(0),
      "registered GB/s": row.registeredGBps?.toFixed(2),
      "via device ptr GB/s": row.devicePointerGBps?.toFixed(2),
      note: row.error ?? row.note ?? row.lastWiringError ?? "",
    })),
  );
}
