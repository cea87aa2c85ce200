// A replay as Chrome trace-event JSON (what Perfetto and chrome://tracing open): one counter track per
// policy (`"ph": "C"` events whose args are `active`, `reserved`, `cached` and `mapped` bytes), written where a
// figure changed, and the trace's marks as instant events. Time is the event index, in microseconds: the
// trace has no clock, and one event a microsecond keeps the tracks' shapes.
import type { PolicyRun } from "../replay/policy-run.js";

/** One counter event of the export (what a reader of the JSON finds in `traceEvents`). */
export interface ChromeCounterEvent {
  name: string;
  ph: "C";
  ts: number;
  pid: number;
  tid: number;
  args: { active: number; reserved: number; cached: number; mapped: number };
}

/** Collects the counters as the replay runs: call {@link event} after every event, {@link mark} at marks. */
export class ChromeTraceExport {
  // The events as JSON text, joined a thousand at a time: one flat string per thousand events costs a
  // fraction of an object (or a string) per event.
  readonly #chunks: string[] = [];
  #events: string[] = [];
  readonly #last: (string | undefined)[] = [];
  readonly #names: string[];

  /** An export of `policies` (the replay's, in its order), under `title` as the process's name. */
  constructor(policies: readonly string[], title: string) {
    this.#names = policies.map((policy) => JSON.stringify(`memory (${policy})`));
    this.#push(JSON.stringify({ name: "process_name", ph: "M", pid: 1, tid: 0, args: { name: title } }));
    this.#push(JSON.stringify({ name: "thread_name", ph: "M", pid: 1, tid: 0, args: { name: "replay" } }));
  }

  /** After event `index`: each run's figures, written for the runs where one changed. */
  event(index: number, runs: readonly PolicyRun[]): void {
    runs.forEach((run, policy) => {
      const { active, cache, mapped } = run.allocator.memoryStats();
      const args = `{"active":${active},"reserved":${active + cache},"cached":${cache},"mapped":${mapped}}`;
      if (this.#last[policy] === args) return;
      this.#last[policy] = args;
      this.#push(`{"name":${this.#names[policy]},"ph":"C","ts":${index},"pid":1,"tid":0,"args":${args}}`);
    });
  }

  /** A mark before event `index`: an instant event named as the mark. */
  mark(name: string, index: number): void {
    this.#push(JSON.stringify({ name, ph: "i", s: "p", ts: index, pid: 1, tid: 0 }));
  }

  #push(line: string): void {
    this.#events.push(line);
    if (this.#events.length === 1000) {
      this.#chunks.push(this.#events.join(",\n"));
      this.#events = [];
    }
  }

  /** The JSON text in pieces, in order (to write without joining them first). Call after the last event. */
  parts(): string[] {
    if (this.#events.length > 0) this.#chunks.push(this.#events.join(",\n"));
    this.#events = [];
    const body = this.#chunks.map((chunk, index) => (index === 0 ? chunk : `,\n${chunk}`));
    return ['{"displayTimeUnit":"ns","traceEvents":[\n', ...body, "\n]}\n"];
  }

  /** The JSON text: `{ traceEvents, displayTimeUnit }`, one event a line. Call after the last event. */
  finish(): string {
    return this.parts().join("");
  }
}
