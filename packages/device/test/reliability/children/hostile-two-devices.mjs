// Run by hostile-native.test.ts: two Devices in one process each try to hold 40,000 page-sized buffers (one
// mapping each), more together than vm.max_map_count allows. The process-wide account must refuse the
// second Device with a typed error while V8 can still map its own heap; then the process keeps working.
import { Device } from "@nuvec/device";

const PER_DEVICE = 40_000;
const first = Device.open();
const second = Device.open();
const pageSize = first.info().pageSize;
const held = { first: [], second: [] };
const refusals = [];
for (const [name, device] of [
  ["first", first],
  ["second", second],
]) {
  for (let index = 0; index < PER_DEVICE; index += 1) {
    try {
      held[name].push(device.malloc(pageSize));
    } catch (error) {
      refusals.push({
        device: name,
        at: index,
        name: error.name,
        code: error.code,
        cause: error.cause?.name,
      });
      break;
    }
  }
}
// A refused malloc changed nothing, and a mapping is refused too.
let mapRefusal;
try {
  second.mapFile(process.argv[2]);
} catch (error) {
  mapRefusal = { name: error.name, code: error.code };
}
// V8 can still grow its heap: hundreds of MiB of JavaScript objects need many new heap mappings.
let chunks = [];
for (let round = 0; round < 40; round += 1) chunks.push(new Array(1_000_000).fill(round));
const jsWorked = chunks.length === 40;
chunks = [];
const limit = first.info().resourceLimit;
for (const buffer of held.second) buffer.free();
second.close();
// Room again once the second Device gave its buffers back.
const again = first.malloc(pageSize);
again.free();
first.close();
console.log(
  JSON.stringify({
    limit,
    first: held.first.length,
    second: held.second.length,
    refusals,
    mapRefusal,
    jsWorked,
    liveAfter: first.counters().backend.buffersMade - first.counters().backend.buffersReleased,
  }),
);
