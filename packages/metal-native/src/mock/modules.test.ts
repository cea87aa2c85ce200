// The mock's modules beyond the contract: what loadModule refuses and how, and kernels looked up by name.
import { ArgumentError, FormatError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { MOCK_STANDARD_KERNELS } from "../../../native-core/test/stream-contract-kernels.js";
import { thrown } from "../../../native-core/test/support.js";
import { MockBackend, MockModule } from "../mock.js";

describe("mock modules", () => {
  it("refuse a source without a mock entry, naming the entries it has", () => {
    const mock = new MockBackend();
    const error = thrown(() =>
      mock.loadModule({ cuda: 'extern "C" __global__ void k() {}', host: "/lib.so" }),
    );
    expect(error).toBeInstanceOf(FormatError);
    expect(error).toMatchObject({
      code: "ERR_NUVEC_MODULE",
      message:
        "loadModule(): the source has no mock entry (it has entries for cuda, host); the mock backend runs kernels written in TypeScript: { mock: { name: { parameters, run } } }",
    });
    expect((error as FormatError).log).toBeUndefined();
    expect(thrown(() => mock.loadModule(null as never))).toBeInstanceOf(ArgumentError);
    expect(mock.callCounts().loadModule).toBe(2);
    expect(mock.calls.map((call) => call.outcome)).toEqual(["failed", "rejected"]);
  });

  it("refuse kernels that are not { parameters, run }, every problem a line of the log", () => {
    const mock = new MockBackend();
    const error = thrown(() =>
      mock.loadModule({
        mock: {
          ok: MOCK_STANDARD_KERNELS.fill,
          half: { parameters: ["f16"], run() {} },
          lazy: { parameters: ["u32"] },
        } as never,
      }),
    ) as FormatError;
    expect(error).toBeInstanceOf(FormatError);
    expect(error.log).toBe(
      'half: parameters must be an array of buffer, i32, u32, f32, i64, u64, f64, got ["f16"]\nlazy: run must be a function, got undefined',
    );
    expect(error.message).toBe(`loadModule(): 2 kernels of the mock entry cannot be loaded:\n${error.log}`);
    expect(thrown(() => mock.loadModule({ mock: [] as never }))).toMatchObject({ code: "ERR_NUVEC_MODULE" });
  });

  it("read each kernel once at load, and give the same kernel for a name every time", () => {
    const mock = new MockBackend();
    const parameters = ["buffer", "u32"];
    const module = mock.loadModule({ mock: { k: { parameters: parameters as never, run() {} } } });
    parameters.push("f32"); // after the load: the module has its own copy
    expect(module).toBeInstanceOf(MockModule);
    expect(module.label).toBe("module#1");
    expect(module.kernelNames).toEqual(["k"]);
    const kernel = module.kernel("k");
    expect(kernel.parameters).toEqual(["buffer", "u32"]);
    expect(module.kernel("k", ["buffer", "u32"])).toBe(kernel);
    expect(Object.isFrozen(kernel)).toBe(true);
    expect(thrown(() => module.kernel(1 as never))).toMatchObject({ argument: "name" });
    expect(thrown(() => module.kernel("k", "buffer" as never))).toMatchObject({ argument: "parameters" });
    expect(thrown(() => module.kernel("nope"))).toMatchObject({
      code: "ERR_NUVEC_KERNEL_NOT_FOUND",
      message: 'module#1.kernel("nope"): the module has no kernel of that name (it has k)',
    });
    expect(thrown(() => Object.create(MockModule.prototype).kernel("k"))).toMatchObject({ argument: "this" });
    expect(mock.loadModule({ mock: {} }).label).toBe("module#2");
  });
});
