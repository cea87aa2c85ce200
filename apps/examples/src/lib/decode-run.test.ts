// The decode loop on the mock under every allocator policy: the reference's tokens and logits exactly, every
// buffer given back, nothing left held. Under "segments" the buffers are ranges of segments (and, with the
// mock's address spaces, of one expandable segment), which the streams take as buffers.
import { join } from "node:path";
import { ALLOCATOR_POLICIES, Device, mapSafetensors, writeSafetensors } from "@nuvec/device";
import { MockBackend } from "@nuvec/metal-native/mock";
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../test/support.js";
import { MOCK_DECODE_KERNELS } from "./decode-kernels.js";
import { DEFAULT_SHAPE, modelWeights, referenceDecode } from "./decode-model.js";
import { decodeOnDevice } from "./decode-run.js";

const folder = scratchFolder("nuvec-decode-run-");
const weights = modelWeights(DEFAULT_SHAPE);
const path = join(folder, "tiny.safetensors");
writeSafetensors(
  path,
  weights.map(({ name, rows, columns, values }) => ({
    name,
    dtype: "F32",
    shape: [rows, columns],
    data: values,
  })),
);
const steps = 9;
const reference = referenceDecode(DEFAULT_SHAPE, weights, 1, steps);

describe("decodeOnDevice on the mock", () => {
  for (const policy of ALLOCATOR_POLICIES) {
    for (const mapGranularity of policy === "segments" ? [undefined, 2 * 1024 * 1024] : [undefined]) {
      const label = mapGranularity === undefined ? policy : `${policy}, address spaces`;
      it(`decodes the reference's tokens and logits exactly (${label})`, async () => {
        const backend = new MockBackend(mapGranularity === undefined ? {} : { mapGranularity });
        using device = Device.open({ backend, policy });
        const module = device.loadModule({ mock: MOCK_DECODE_KERNELS });
        let outcome: Awaited<ReturnType<typeof decodeOnDevice>>;
        {
          using checkpoint = mapSafetensors(device, path);
          outcome = await decodeOnDevice(device, module, checkpoint, {
            shape: DEFAULT_SHAPE,
            steps,
            first: 1,
            initialCapacity: 2,
          });
        }
        expect(outcome.tokens).toEqual(reference.tokens);
        expect(outcome.logits).toEqual(reference.logits);
        // Growths at rows 2, 4 and 8 in each of the two layers.
        expect([outcome.cacheGrowths, outcome.finalCapacity, outcome.launches]).toEqual([6, 16, steps * 21]);
        expect(outcome.peakStreamPending.buffers).toBe(4);
        expect(device.counters().streamPending).toEqual({ buffers: 0, bytes: 0 });
        expect(device.memoryStats()).toMatchObject({ active: 0, mapped: 0 });
        module.release();
      });
    }
  }
});
