// Run by trace-file.hostile.test.ts in its own process: replays the trace file PATH with replayTraceStream
// and prints the result and the process's peak resident size, which the parent compares with its bound.
import { replayTraceStream } from "@nuvec/allocator/node";

const result = await replayTraceStream(process.argv[2]);
console.log(
  JSON.stringify({
    events: result.events,
    active: result.stats.active,
    peakActive: result.stats.peakActive,
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
  }),
);
