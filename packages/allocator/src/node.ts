// `@nuvec/allocator/node`: what needs Node.js (reading trace files). The Node.js code lives under
// src/node/, the one place the lint allows `node:` imports; the rest of src/ runs anywhere.
export {
  DEFAULT_MAX_LINE_LENGTH,
  readTrace,
  replayTraceFile,
  replayTraceStream,
  streamTrace,
  streamTraceBatches,
  type TraceSource,
  type TraceStreamOptions,
} from "./node/trace-file.js";
// The one trace type, the main entry's: readTrace gives what a Device's stopTrace() gives.
export type { Trace } from "./trace-format.js";
