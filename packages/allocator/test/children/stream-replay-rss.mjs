// Run by trace-file.hostile.test.ts in its own process: replays a generated trace of EVENTS events (default
// 36 million), streamed as NDJSON text that is never held whole, and prints the result and the process's peak
// resident size, which the parent compares with its bound.
import { replayTraceStream } from "@nuvec/allocator/node";

const events = Number(process.argv[2] ?? 36_000_000);
const live = 1000; // allocations live at once

/** The trace's text in chunks: a header, then allocations of dense ids, each freed `live` allocations later. */
async function* generate() {
  yield `${JSON.stringify({ name: "generated", events })}\n`;
  let written = 0;
  let next = 0;
  while (written < events) {
    let chunk = "";
    for (let line = 0; line < 4096 && written < events; line += 1) {
      if (next >= live && written % 2 === 1) {
        chunk += `["f",${next - live}]\n`;
      } else {
        chunk += `["a",${next},${((next * 2654435761) % 1000000) + 1}]\n`;
        next += 1;
      }
      written += 1;
    }
    yield Buffer.from(chunk);
  }
}

const result = await replayTraceStream(generate(), { name: "generated" });
console.log(
  JSON.stringify({
    events: result.events,
    active: result.stats.active,
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
  }),
);
