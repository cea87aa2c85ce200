// Run by bad-input.test.ts: maps a file, truncates it, then reads past the new end. On a real mmap the
// kernel raises SIGBUS; the parent checks that this process died of it (and did not read stale bytes).
import { truncateSync } from "node:fs";
import { Device } from "@nuvec/device";

const path = process.argv[2];
const device = Device.open();
const file = device.mapFile(path);
const view = new Uint8Array(file.contents());
console.log(`mapped ${view.length} bytes`);
truncateSync(path, 100);
// The first page is still backed by the file; the last one is past the end now.
console.log(`read ${view[view.length - 1]}`);
