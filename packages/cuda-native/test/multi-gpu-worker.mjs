// The worker of test/multi-gpu.test.ts: one Device on the CUDA device the test names (a thread opens one
// device), a block written and read back, and what the Device and the handle say, posted back.
import { parentPort, workerData } from "node:worker_threads";
import { loadCudaBackend } from "@nuvec/cuda-native";
import { Device } from "@nuvec/device";

try {
  const backend = loadCudaBackend({ device: workerData.device });
  const device = Device.open({ backend });
  const buffer = device.malloc(workerData.bytes);
  const pattern = new Uint8Array(4096).map((_, index) => (index * 7 + workerData.device) & 0xff);
  buffer.write(pattern, 0);
  const back = buffer.read(0, pattern.length);
  const report = {
    ok: true,
    name: backend.name,
    ordinal: buffer.nativeHandle().device,
    policy: device.info().policy,
    intact: back.every((value, index) => value === pattern[index]),
    active: device.memoryStats().active,
  };
  buffer.free();
  device.close();
  parentPort.postMessage(report);
} catch (error) {
  parentPort.postMessage({ ok: false, code: error?.code, message: String(error?.message ?? error) });
}
