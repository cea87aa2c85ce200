// The demo, for now: the size math and the stats table of @nuvec/stats on a few example requests.
// It becomes the full device demo (a checkpoint mapped without a copy, wired, and a decode workload)
// once @nuvec/device exists.
import { allocationSize, emptyMemoryStats, formatBytes, formatMemoryStats, PAGE } from "@nuvec/stats";

const requests = [1, 300, 5000, PAGE, PAGE + 1, 3 * 1024 * 1024 + 7, 419_430_400];
console.log("request → size class (what the allocator charges)");
let active = 0;
for (const bytes of requests) {
  const size = allocationSize(bytes) ?? 0;
  active += size;
  console.log(`  ${String(bytes).padStart(10)} B → ${formatBytes(size).padStart(11)}`);
}
console.log();
console.log(
  formatMemoryStats(
    { ...emptyMemoryStats(), active, peak: active, activeWithMapped: active, peakWithMapped: active },
    { title: "if every request above were live at once" },
  ),
);
