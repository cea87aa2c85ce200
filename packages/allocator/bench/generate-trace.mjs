// Writes a long synthetic trace to a file as it goes (never held whole), for measuring replay memory:
//   node bench/generate-trace.mjs OUT.ndjson [EVENTS=36000000] [LIVE=1000]
// A header, then allocations of ids in order (sizes spread over 1 B to 1 MB), each freed LIVE allocations
// later, so at most LIVE allocations are live at once whatever the length. OUT ending in .gz is gzipped.
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { createGzip } from "node:zlib";

const [out, eventsText = "36000000", liveText = "1000"] = process.argv.slice(2);
if (out === undefined) {
  console.error("usage: node bench/generate-trace.mjs OUT.ndjson [EVENTS] [LIVE]");
  process.exit(2);
}
const events = Number(eventsText);
const live = Number(liveText);
const file = createWriteStream(out);
let sink = file;
if (out.endsWith(".gz")) {
  sink = createGzip();
  sink.pipe(file);
}

async function write(text) {
  if (!sink.write(text)) await once(sink, "drain");
}

await write(`${JSON.stringify({ name: "generated", events, live })}\n`);
let written = 0;
let next = 0;
while (written < events) {
  let chunk = "";
  for (let line = 0; line < 4096 && written < events; line += 1) {
    if (next >= live && written % 2 === 1) chunk += `["f",${next - live}]\n`;
    else {
      chunk += `["a",${next},${((next * 2654435761) % 1000000) + 1}]\n`;
      next += 1;
    }
    written += 1;
  }
  await write(chunk);
}
sink.end();
await once(file, "close");
console.log(`${out}: ${events} events, ${next} allocations, at most ${live} live`);
