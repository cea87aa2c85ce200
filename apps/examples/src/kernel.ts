// A runtime's kernel on nuvec memory, end to end: malloc, fill through contents(), run a native
// kernel on the same memory by its address (no copy), free the buffer with { after: the kernel's promise },
// read the kernel's result — and show what nuvec's statistics said while the kernel ran: the buffer still
// in `active` and in `pendingFrees`, a malloc of the same size served with other memory, and the memory
// back in the cache (a hit, the same address) once the kernel was done.
import { Device } from "@nuvec/device";
import { formatBytes } from "@nuvec/stats";
import { type CommandLine, JSON_FLAG, readCommandLine, runProgram, UsageError } from "./lib/arguments.js";
import { cpuAddress, fillPattern, loadKernelAddon } from "./lib/kernel-addon.js";

const commandLine: CommandLine = {
  synopsis: "kernel [flags]",
  description: "Runs the example kernel addon on nuvec memory, showing what the statistics say meanwhile.",
  flags: [
    { name: "count", value: "N", help: "how many float32 values", defaultText: "4194304" },
    { name: "factor", value: "F", help: "what the kernel scales them by", defaultText: "3" },
    JSON_FLAG,
  ],
};

async function main(argv: string[]): Promise<number> {
  const given = readCommandLine(argv, commandLine)?.flags;
  if (given === undefined) return 0;
  const count = Number(given.get("count") ?? "4194304");
  if (!Number.isSafeInteger(count) || count <= 0)
    throw new UsageError(`--count: "${given.get("count")}" is not a positive integer`);
  const factor = Number(given.get("factor") ?? "3");
  if (!Number.isFinite(factor)) throw new UsageError(`--factor: "${given.get("factor")}" is not a number`);
  const kernels = loadKernelAddon();
  // On macOS the scaling runs on the GPU, on the runtime's own queue that nuvec's residency sets attach to
  // (written for Metal, compile-checked only: never run where it was written). Elsewhere on the CPU pool.
  const gpu = process.platform === "darwin" ? kernels.metal : undefined;
  const commandQueue = gpu?.newCommandQueue();
  using device = Device.open(commandQueue === undefined ? {} : { metal: { commandQueue } });
  const scale = (factorToApply: number) => {
    const native = handle;
    if (gpu !== undefined && commandQueue !== undefined && native.platform === "metal") {
      return gpu.scale(native.metalBuffer, count, factorToApply, commandQueue);
    }
    return kernels.scale(cpuAddress(native), count, factorToApply);
  };
  const bytes = count * Float32Array.BYTES_PER_ELEMENT;

  // 1. malloc and fill through contents(): small integers, so the float32 sums below are exact.
  const buffer = device.malloc(bytes);
  const data = new Float32Array(buffer.contents(), 0, count);
  let expected = fillPattern(data, 7);
  const handle = device.native.handle(buffer);

  // 2. Zero copy: a kernel writes the memory, JavaScript reads its writes through the same view.
  await scale(2);
  let zeroCopy = true;
  for (let index = 0; index < count; index += 1) zeroCopy &&= data[index] === 2 * (index % 7);
  expected *= 2;

  // 3. The kernel runs on the same memory, asynchronously; the buffer is freed at once, with { after }.
  const kernel = scale(factor).then(() => kernels.sum(cpuAddress(handle), count));
  buffer.free({ after: kernel });
  const viewDetached = data.length === 0;
  const whileRunning = { stats: device.memoryStats(), pendingFrees: device.counters().pendingFrees };
  const meanwhile = device.malloc(bytes); // the same size class, while the kernel may still write
  const otherMemory = cpuAddress(device.native.handle(meanwhile)) !== cpuAddress(handle);
  new Float32Array(meanwhile.contents()).fill(-1); // would corrupt the kernel's data if it were the same memory

  // 4. The kernel's result; then the memory is cached again.
  const total = await kernel;
  const afterSettling = { stats: device.memoryStats(), pendingFrees: device.counters().pendingFrees };
  const hitsBefore = device.counters().cacheHits;
  const reused = device.malloc(bytes);
  const cacheHitSameAddress =
    device.counters().cacheHits === hitsBefore + 1 &&
    cpuAddress(device.native.handle(reused)) === cpuAddress(handle);
  const resultIntact = total === expected * Math.fround(factor);
  const ok = zeroCopy && viewDetached && otherMemory && resultIntact && cacheHitSameAddress;

  const report = {
    backend: device.native.backend.platform,
    name: device.native.backend.name,
    count,
    factor,
    bytes,
    expected: expected * Math.fround(factor),
    total,
    zeroCopy,
    viewDetached,
    otherMemoryWhileRunning: otherMemory,
    resultIntact,
    cacheHitSameAddress,
    whileRunning: { active: whileRunning.stats.active, pendingFrees: whileRunning.pendingFrees },
    afterSettling: {
      active: afterSettling.stats.active,
      pendingFrees: afterSettling.pendingFrees,
      cache: afterSettling.stats.cache,
    },
    ok,
  };
  if (given.has("json")) {
    console.log(JSON.stringify(report));
    return ok ? 0 : 1;
  }
  const yes = (value: boolean) => (value ? "yes" : "NO");
  console.log(
    `${device.native.backend.name} (${device.native.backend.platform}): ${count} float32 values, ${formatBytes(bytes)}`,
  );
  console.log(`  the kernel's writes read back through contents() (zero copy)     ${yes(zeroCopy)}`);
  console.log(`  free({ after: kernel }) detached the view at once                ${yes(viewDetached)}`);
  console.log("  while the kernel ran:");
  console.log(
    `    active (the freed buffer still counted)                        ${formatBytes(whileRunning.stats.active)}`,
  );
  console.log(
    `    pendingFrees                                                   ${whileRunning.pendingFrees}`,
  );
  console.log(`    a malloc of the same size got other memory                     ${yes(otherMemory)}`);
  console.log(
    `  the kernel's result is intact: sum ${total} (expected ${report.expected})  ${yes(resultIntact)}`,
  );
  console.log("  after the kernel's promise settled:");
  console.log(
    `    pendingFrees ${afterSettling.pendingFrees}, cache ${formatBytes(afterSettling.stats.cache)}`,
  );
  console.log(
    `    the next malloc of that size was a cache hit at the same address  ${yes(cacheHitSameAddress)}`,
  );
  return ok ? 0 : 1;
}

await runProgram("kernel", () => main(process.argv.slice(2)));
