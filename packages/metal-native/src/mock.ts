/**
 * `@nuvec/metal-native/mock`: a pretend device implementing {@link NativeBackend} in TypeScript, for the tests
 * of runtimes and of nuvec itself. It imports no native code and no `node:` module (real files are read
 * through `node:fs` only when a test maps one), so it loads anywhere.
 *
 * @packageDocumentation
 */

export * from "./exports.js";
export { MockBackend } from "./mock/backend.js";
export { MockBuffer, MockBufferRange } from "./mock/buffer.js";
export type { MockCall, MockCallCounts, MockCallName, MockCallOutcome } from "./mock/calls.js";
export type { MockWiringFault } from "./mock/core.js";
export { MockMappedFile, type MockMappedFileSource } from "./mock/mapped-file.js";
export {
  type MockKernelHandle,
  type MockKernelRun,
  MockModule,
} from "./mock/modules.js";
export type { MockStreamCompletion, MockStreamOptions } from "./mock/options.js";
export { MOCK_DEFAULTS, type MockBackendOptions, type MockMappingFailure } from "./mock/options.js";
export { MockResidencySet, type MockResidencySetCalls } from "./mock/residency-set.js";
export { MockEvent, MockStream } from "./mock/streams.js";
