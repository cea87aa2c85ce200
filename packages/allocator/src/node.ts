// `@nuvec/allocator/node`: what needs Node.js (reading trace files). The Node.js code lives under
// src/node/, the one place the lint allows `node:` imports; the rest of src/ runs anywhere.
export { readTrace, replayTraceFile, type Trace } from "./node/trace-file.js";
