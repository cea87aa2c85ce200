#!/usr/bin/env node
// Renders RELIABILITY.md (repository root) from the figures the reliability tests wrote in
// packages/device/.reliability/sections/*.json (merged into .reliability/figures.json). Run after the tests:
//   node packages/device/test/reliability/report.mjs
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const packageDirectory = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const sectionsDirectory = join(packageDirectory, ".reliability/sections");
const output = resolve(packageDirectory, "../../RELIABILITY.md");
if (!existsSync(sectionsDirectory)) {
  console.error("no figures: run the reliability tests first (pnpm --filter @nuvec/device reliability)");
  process.exit(1);
}
const figures = Object.fromEntries(
  readdirSync(sectionsDirectory)
    .filter((name) => name.endsWith(".json"))
    .map((name) => [name.slice(0, -5), JSON.parse(readFileSync(join(sectionsDirectory, name), "utf8"))]),
);
writeFileSync(join(packageDirectory, ".reliability/figures.json"), `${JSON.stringify(figures, null, 2)}\n`);

const number = (value) => (typeof value === "number" ? value.toLocaleString("en-US") : "—");
const mib = (bytes) => (typeof bytes === "number" ? `${(bytes / 1024 ** 2).toFixed(1)} MiB` : "—");
const lines = [];
const { fuzz = {}, faults = {}, soak = {}, worker = {} } = figures;
const badInput = figures["bad-input"] ?? {};
const modes = [...new Set(Object.values(figures).map((section) => section.mode))].join(", ");
const when = Object.values(figures)
  .map((section) => section.writtenAt)
  .sort()
  .at(-1);
const platform = Object.values(figures)[0]?.platform ?? "?";
const node = Object.values(figures)[0]?.node ?? "?";

lines.push("# Reliability", "");
lines.push(
  "Figures of the last run of nuvec's reliability suite (`packages/device/test/reliability/`), written by the",
  "tests themselves and rendered by `packages/device/test/reliability/report.mjs`. Do not edit by hand.",
  "",
  `Last run: ${when} · mode **${modes}** · ${platform} · Node.js ${node}.`,
  "",
  "## Commands",
  "",
  "```sh",
  "# Full length (thousands of fuzz runs, a one-minute soak of the whole traces), then this page:",
  "npx -y pnpm@12.4.2 --filter @nuvec/device reliability",
  "# The shortened version runs with every `npm test` (CI), within the device package's tests:",
  "cd packages/device && npx vitest run test/reliability && node test/reliability/report.mjs",
  "```",
  "",
  "Budgets: `NUVEC_FUZZ_RUNS`, `NUVEC_FUZZ_HOST_RUNS`, `NUVEC_FAULT_RUNS`, `NUVEC_SOAK_SECONDS`, `NUVEC_SOAK_EVENTS`.",
  "A fuzz failure prints fast-check's seed, path and replayPath: replay with `NUVEC_FUZZ_SEED`, `NUVEC_FUZZ_PATH`",
  "and `NUVEC_FUZZ_REPLAY_PATH`.",
  "",
  "## Model-based fuzzing of the Device",
  "",
  "Random sequences of malloc, free, mapFile, release, the three limit setters, clearCache, resetPeak,",
  "refreshResidency and writes through `contents()`, compared after every step with an independent reference",
  "model (`model.ts`): every `MemoryStats` field, the allocator's counters, the very buffer a cache hit hands back,",
  "the bytes written (through new and old views), mapped files' bytes, detached views of freed buffers; wired",
  "memory against what the backend reports wired. Runs include fast-check's shrinking runs.",
  "",
  "| backend | runs | steps | refusals checked | cache hits |",
  "| --- | ---: | ---: | ---: | ---: |",
);
for (const [name, tally] of Object.entries(fuzz.backends ?? {})) {
  lines.push(
    `| ${name} | ${number(tally.runs)} | ${number(tally.steps)} | ${number(tally.refusals)} | ${number(tally.cacheHits)} |`,
  );
}
if (fuzz.hostSkipped) lines.push("", `Host backend skipped: ${fuzz.hostSkipped}.`);
const streams = figures["streams-fuzz"];
if (streams !== undefined) {
  lines.push(
    "",
    "## Model-based fuzzing of the Device's streams",
    "",
    "Several streams on the mock with manual completion (`streams-fuzz.test.ts`): launches, writes, reads, copies,",
    "frees, records, waits, runs of single streams out of order and part way, host uses, synchronizes, stream",
    "releases and clearCache; events that never complete until close. After every step every figure equals a",
    "shadow Device's without streams (each free applied when its memory goes back), `streamPending` equals the",
    "model's held frees, and no memory is touched by an older owner's work after a newer owner's (no reuse while",
    "work naming it is pending on another stream without a wait); close settles every promise. Budgets:",
    "`NUVEC_STREAMS_FUZZ_RUNS`, `NUVEC_STREAMS_FUZZ_COMMANDS`.",
    "",
    "| runs | steps | frees held for several streams | reuses of memory with work pending | operations pending at close |",
    "| ---: | ---: | ---: | ---: | ---: |",
    `| ${number(streams.runs)} | ${number(streams.steps)} | ${number(streams.heldFrees)} | ${number(streams.fencedReuses)} | ${number(streams.pendingAtClose)} |`,
  );
}
lines.push(
  "",
  "## Fault injection",
  "",
  "| fault | injected | outcome |",
  "| --- | ---: | --- |",
  `| system allocation fails (mock) | ${number(faults.allocationFaultsInjected)} | ${number(faults.allocationFaultsRetried)} survived by the retry after clearing the cache; ${number(faults.allocationFaultsRefused)} failed twice → \`OutOfMemoryError\` (\`ERR_NUVEC_SYSTEM_ALLOCATION_FAILED\`), only the cache changed, nothing counted twice |`,
  `| residency set creation fails (mock) | ${number(faults.residencySetFaults)} | part way: later buffers share the emptiest set; from the start: residency unsupported, the limit stored |`,
  `| wiring fails (mock) | ${number(faults.wiringFaultsInjected)} | counted, never thrown; the device kept working |`,
  `| RLIMIT_MEMLOCK 64 KiB, CAP_IPC_LOCK dropped (host, child process) | ${number(faults.hostWiringFailures)} | ${faults.hostMemlockChild ?? "not run"} |`,
  "",
  `Faults survived (the device kept working and its books balanced): ${number(faults.survived)} scenarios and runs.`,
  "",
  "## Bad input catalogue",
  "",
  "Every public entry point with negative, fractional, NaN, ±Infinity, bigint, string, undefined, null, object,",
  "2**53 and above-max-buffer-length values; double free, use after free (deferred too) and after close, another",
  "device's buffers, non-buffers; missing, empty, directory, NUL-containing and unreadable paths. Each must throw",
  "the error it names (class, `code`, the argument) and leave `memoryStats()` and `counters()` of both devices, the",
  "backend's counters and its residency sets unchanged. `-0` is accepted as 0 (`@nuvec/stats`' DECISIONS.md),",
  "tested apart.",
  "",
  "| backend | cases tried | passing | skipped |",
  "| --- | ---: | ---: | --- |",
);
for (const [name, tally] of Object.entries(badInput.backends ?? {})) {
  lines.push(
    `| ${name} | ${number(tally.tried)} | ${number(tally.passed)} | ${tally.skipped.join("; ") || "none"} |`,
  );
}
lines.push(
  "",
  "A file truncated after it was mapped: releasing it works and the accounts are right (mock and host); reading",
  "past the new end on the host raises SIGBUS, as any mmap does — shown in a child process, not caught.",
  "",
  "## Load and leaks",
  "",
  `Traces: ${(soak.traces ?? []).join(", ") || "none found"}.`,
  "",
  "| backend | seconds | replays | events replayed | refusals (memory limit) | stamps checked |",
  "| --- | ---: | ---: | ---: | ---: | ---: |",
);
for (const name of ["mock", "host"]) {
  const tally = soak[name];
  if (!tally) continue;
  lines.push(
    `| ${name} | ${tally.seconds} | ${number(tally.replays)} | ${number(tally.events)} | ${number(tally.refusals)} | ${number(tally.stampsChecked)} |`,
  );
}
const leaks = soak.hostLeaks;
if (leaks) {
  lines.push(
    "",
    "After `close()` of every device, on the host backend:",
    "",
    `- **bytes leaked: ${number(leaks.bytesLeaked)}** (backend buffer and mapped bytes + VmLck, against the start);`,
    `- live system buffers: ${number(leaks.liveBuffersDelta)} more; wired bytes: ${number(leaks.wiredBytesDelta)}; VmLck: ${number(leaks.vmLckDelta)} bytes;`,
    `- /proc/self/maps: ${number(leaks.mapsDelta)} lines; VmSize: ${mib(leaks.vmSizeDelta)} more (recorded, not asserted: V8's heap and the C allocator's arenas grow while the mappings fell and every backend byte came back; not explained further);`,
    `- V8 \`external\`: ${mib(leaks.externalDeltaAfterClose)} after close. While replaying, \`external\` minus \`active\` was at most ${mib(leaks.externalWorstGap)} (${number(leaks.externalCheckpoints)} checkpoints after a GC). What it measures: the ArrayBuffers handed out by \`contents()\` that V8 has not swept yet — not \`active + cache\` (cached buffers' views are detached), and not the addon's \`napi_adjust_external_memory\`, which feeds V8's GC heuristics but does not show in \`process.memoryUsage().external\`. So it is reported, not asserted equal.`,
  );
}
// The hostile-use table is written by hand (what each probe does and what happens): included as it is.
const hostile = join(packageDirectory, "test/reliability/hostile-use.md");
if (existsSync(hostile)) lines.push("", readFileSync(hostile, "utf8").trimEnd());
lines.push("", "## Worker threads", "");
for (const [name, tally] of Object.entries(worker).filter(([, value]) => typeof value === "object")) {
  lines.push(
    `- Device ${name === "closed" ? "closed before the worker exits" : "left open when the worker exits (cleanup hooks)"}: ${mib(tally.workerActive)} active and ${mib(tally.workerWired)} wired in the worker; afterwards VmLck ${number(tally.vmLckDelta)} bytes more, main thread's backend counters unchanged, maps ${number(tally.mapsDelta)} lines.`,
  );
}
if (!Object.values(worker).some((value) => typeof value === "object"))
  lines.push("Not run (host backend unavailable).");
writeFileSync(output, `${lines.join("\n")}\n`);
console.log(`wrote ${output}`);
