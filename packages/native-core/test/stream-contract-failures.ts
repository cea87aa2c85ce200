// What every backend with streams does when an operation fails (streams.ts, NativeStream): the stream's later
// work is skipped and every later point reports the failure, the points before it resolve, and a promise of
// the stream that nobody awaits yet is never an unhandled rejection (under Node's default: the end of the
// process). A backend takes part by giving a kernel that fails when launched (the mock: a TypeScript kernel
// that throws; the host: one returning non-zero). CUDA leaves it out: a faulting kernel ends its context.
import { afterEach, describe, expect, it } from "vitest";
import type {
  KernelParameterKind,
  NativeBackend,
  NativeKernelArgument,
  NativeModule,
  NativeModuleSource,
  NativeStream,
} from "../src/index.js";
import { STANDARD_KERNEL_PARAMETERS } from "./stream-contract-kernels.js";
import { asFloats, buffer, elementsShape, f32, f32Bytes, u32 } from "./stream-contract-support.js";

/** Options of {@link describeStreamFailureContract}. */
export interface StreamFailureContractOptions {
  /** A module source with the standard kernels and a kernel that fails when launched. */
  readonly kernels: NativeModuleSource;
  /** The failing kernel's name, its parameters, and the arguments of a launch that fails. */
  readonly failing: {
    readonly name: string;
    readonly parameters: readonly KernelParameterKind[];
    readonly args: readonly NativeKernelArgument[];
  };
}

/** Declares the tests of a failing operation, under `Stream failures: <name>`. */
export function describeStreamFailureContract(
  name: string,
  open: () => NativeBackend,
  options: StreamFailureContractOptions,
): void {
  describe(`Stream failures: ${name}`, () => {
    const made: { release(): void }[] = [];
    afterEach(() => {
      for (const handle of made.splice(0).reverse()) handle.release();
    });

    it("skips the work after a failed operation and reports the failure at every later point", async () => {
      const backend = open();
      const stream = (backend.newStream as () => NativeStream)();
      const module = (backend.loadModule as (source: NativeModuleSource) => NativeModule)(options.kernels);
      const x = backend.newBuffer(16);
      made.push(x, module, stream);
      const fill = module.kernel("fill", STANDARD_KERNEL_PARAMETERS.fill);
      const failing = module.kernel(options.failing.name, options.failing.parameters);
      stream.write(x, 0, f32Bytes([1, 2, 3, 4]));
      const before = stream.record();
      const read = stream.read(x, 0, 16);
      stream.launch(failing, elementsShape(1), options.failing.args);
      const after = stream.record();
      stream.launch(fill, elementsShape(4), [buffer(x), f32(9), u32(4)]);
      const skipped = stream.read(x, 0, 16);
      made.push(before, after);
      // Nothing awaited for a while: the failure happens with no handler attached to any of these promises,
      // which must not be an unhandled rejection (under Node's default it would end the process).
      const unhandled: unknown[] = [];
      const listener = (reason: unknown) => unhandled.push(reason);
      process.on("unhandledRejection", listener);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const last = stream.record();
      made.push(last);
      await last.done().catch(() => {}); // whatever the backend's pace, the failure has happened now
      await new Promise((resolve) => setTimeout(resolve, 10));
      process.off("unhandledRejection", listener);
      expect(unhandled).toEqual([]);
      await before.done();
      expect(asFloats(await read)).toEqual([1, 2, 3, 4]);
      const failure = await after.done().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeDefined();
      await expect(skipped).rejects.toBeDefined();
      await expect(stream.done()).rejects.toBeDefined();
      expect(() => stream.synchronize()).toThrow();
      // The fill after the failure never ran: the buffer holds what was written before it.
      expect(asFloats(x.read(0, 16))).toEqual([1, 2, 3, 4]);
    });
  });
}
