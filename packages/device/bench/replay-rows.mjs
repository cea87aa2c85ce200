#!/usr/bin/env node
// Section 3 of the Device bench alone (device-bench-replays.mjs): the warm and cold replay rows, a trace's
// allocations and frees through a Device over the mock against MLX's policy alone. Run after the build:
//   node --expose-gc bench/replay-rows.mjs [--milliseconds N] [--measurements N]
import { replayRows } from "./device-bench-replays.mjs";

replayRows();
