// What runs without a GPU (CI): the loader's argument checks, made before the driver is touched, and its
// refusal with NativeUnavailableError where there is no driver or no device.
import { NativeArgumentError, NativeError, NativeUnavailableError } from "@nuvec/metal-native";
import { describe, expect, it } from "vitest";
import { loadCudaBackend } from "../src/index.js";
import { cudaBackend, cudaUnavailableReason } from "./support.js";

function thrown(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to throw, it returned");
}

describe("loadCudaBackend", () => {
  it.each([
    ["-1", { device: -1 }],
    ["1.5", { device: 1.5 }],
    ["NaN", { device: Number.NaN }],
    ['"0"', { device: "0" }],
    ["0n", { device: 0n }],
    ["null", { device: null }],
  ])("refuses device %s with NativeArgumentError before touching the driver", (_label, options) => {
    const error = thrown(() => loadCudaBackend(options as never));
    expect(error).toBeInstanceOf(NativeArgumentError);
    expect((error as NativeArgumentError).code).toBe("ERR_NUVEC_INVALID_ARGUMENT");
    expect((error as NativeArgumentError).argument).toBe("device");
  });

  it.each([
    ["null", null],
    ["a number", 3],
  ])("refuses options that are %s with NativeArgumentError", (_label, options) => {
    const error = thrown(() => loadCudaBackend(options as never));
    expect(error).toBeInstanceOf(NativeArgumentError);
    expect((error as NativeArgumentError).argument).toBe("options");
  });

  it.runIf(cudaBackend === undefined)(
    "without a CUDA driver or device: NativeUnavailableError, with the code, saying why",
    () => {
      const error = thrown(() => loadCudaBackend());
      expect(error).toBeInstanceOf(NativeUnavailableError);
      expect(error).toBeInstanceOf(NativeError);
      expect((error as NativeUnavailableError).code).toBe("ERR_NUVEC_NATIVE_UNAVAILABLE");
      expect((error as Error).name).toBe("NativeUnavailableError");
      expect((error as Error).message).toMatch(/@nuvec\/cuda-native/);
      expect((error as Error).message).toBe(cudaUnavailableReason);
      // Asked again, the same answer (the failure is not cached into something else).
      expect((thrown(() => loadCudaBackend({ device: 0 })) as Error).message).toBe((error as Error).message);
    },
  );

  it.runIf(cudaBackend !== undefined)(
    "with a GPU: a device ordinal the machine does not have is NativeUnavailableError; device 0 still loads",
    () => {
      const error = thrown(() => loadCudaBackend({ device: 4096 }));
      expect(error).toBeInstanceOf(NativeUnavailableError);
      expect((error as Error).message).toMatch(/no CUDA device 4096|one device per thread/);
      expect(loadCudaBackend()).toBe(cudaBackend);
      expect(loadCudaBackend({ device: 0 })).toBe(cudaBackend);
    },
  );
});
