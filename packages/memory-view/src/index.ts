// @nuvec/memory-view: the memory view of nuvec traces and PyTorch memory snapshots (one self-contained HTML
// file), the replay it draws, the PyTorch snapshot reader, and the exports to PyTorch's memory_viz and to
// Chrome's trace-event JSON (Perfetto). The program `nuvec-memory-view` runs them from the command line.

// The root of the error family and the kind the readers throw (every kind is in `@nuvec/stats`).
export { FormatError, NuvecError } from "@nuvec/stats";
export { deviceLine, figureTable, type ReplayedTrace, torchFacts } from "./cli/document.js";
export { type ChromeCounterEvent, ChromeTraceExport } from "./export/chrome.js";
export { PickleStream, type PickleValue, writePickle } from "./export/pickle-writer.js";
export { type TorchExportCounts, TorchSnapshotExport } from "./export/torch.js";
export { AddressedSource, type DeviceFacts, type SourceListener } from "./replay/addressed-source.js";
export { MARKS_IN_FORMAT, streamFilteringMarks, streamMarkedTrace } from "./replay/marked-trace.js";
export { type Applied, PolicyRun, type PolicyRunOptions } from "./replay/policy-run.js";
export {
  isMark,
  type PolicyOutcome,
  type ReplayDevice,
  replayDevice,
  replayForView,
  type ViewReplayOptions,
  type ViewReplayResult,
} from "./replay/replay.js";
export {
  INFLATED_FLOOR_BYTES,
  looksLikeTorchSnapshot,
  MAX_INFLATION,
  MAX_SNAPSHOT_BYTES,
  readTorchSnapshot,
  type TorchWorkload,
} from "./snapshot/torch-snapshot.js";
export type { ColumnSeries, Columns, CoreInput, CoreModel, CoreSeries, MemoryViewCore } from "./view/core.js";
export { memoryViewCore } from "./view/core.js";
export type { BandsView, DrawContext, DrawTarget, MemoryViewDrawing, PeaksView } from "./view/drawing.js";
export { memoryViewDrawing } from "./view/drawing.js";
export { type RecordedWorkload, WorkloadRecorder } from "./view/recorder.js";
export { type FigureTable, type MemoryViewDocument, renderMemoryView } from "./view/render.js";
export { type MemoryViewTicks, memoryViewTicks, type Tick, type TickLayout } from "./view/ticks.js";
