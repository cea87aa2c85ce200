// A runtime's kernel on nuvec memory, end to end: malloc, fill through contents(), run a native
// kernel on the same memory by its address (no copy), free the buffer with { after: the kernel's promise },
// read the kernel's result — and show what nuvec's statistics said while the kernel ran: the buffer still
// in `active` and in `pendingFrees`, a malloc of the same size served with other memory, and the memory
// back in the cache (a hit, the same address) once the kernel was done.
import { parseArgs } from "node:util";
import { Device } from "@nuvec/device";
import { formatBytes } from "@nuvec/stats";
import { cpuAddress, loadKernelAddon } from "./lib/kernel-addon.js";
import { printable } from "./lib/printable.js";

const usage = "usage: kernel [--count N] [--factor F] [--json]";

function positiveInteger(text: string, flag: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value <= 0)
    throw new RangeError(`--${flag}: "${text}" is not a positive integer`);
  return value;
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      count: { type: "string", default: "4194304" },
      factor: { type: "string", default: "3" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  const count = positiveInteger(values.count, "count");
  const factor = Number(values.factor);
  if (!Number.isFinite(factor)) throw new RangeError(`--factor: "${values.factor}" is not a number`);
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
  let expected = 0;
  for (let index = 0; index < count; index += 1) {
    data[index] = index % 7;
    expected += index % 7;
  }
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
  if (values.json) {
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

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const code = (error as { code?: string }).code;
    console.error(
      `kernel: ${printable((error as Error).message, 300)}${code ? ` (${printable(String(code), 40)})` : ""}`,
    );
    console.error(usage);
    process.exitCode = 2;
  },
);
