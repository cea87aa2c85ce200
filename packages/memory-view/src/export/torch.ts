// A nuvec trace as a PyTorch CUDA memory snapshot (what `torch.cuda.memory._dump_snapshot` writes and
// pytorch.org/memory_viz reads): `device_traces` with one device's trace entries (`segment_alloc`, `alloc`,
// `free_requested`, `free_completed`, `segment_free`, and `segment_map` / `segment_unmap` for an expandable
// segment), each with its address, size, stream and (empty) frames, and `segments`, the memory held at the
// end with its blocks. Addresses come from the replay's source: each system buffer a segment, each
// allocation a block of it, under the one policy exported.
import type { SourceListener } from "../replay/addressed-source.js";
import type { Applied } from "../replay/policy-run.js";
import { PickleStream, type PickleValue } from "./pickle-writer.js";

/** What the export counted: trace entries by action, and the segments and blocks held at the end. */
export interface TorchExportCounts {
  entries: number;
  actions: Record<string, number>;
  segments: number;
  blocks: number;
}

interface Block {
  size: number;
  requested: number;
  pending: boolean;
}

const BATCH = 1000;

/**
 * Builds the snapshot as the replay runs: hand it to the replay as the exported policy's listener, and call
 * {@link event} after each of that policy's events.
 */
export class TorchSnapshotExport implements SourceListener {
  readonly #stream = new PickleStream();
  #batch = 0;
  #entries = 0;
  readonly #actions: Record<string, number> = {};
  #time = 0;
  // What the source did during the current event, written after (segment frees) or before (the rest) its
  // allocation's own entries.
  readonly #pending: [string, number, number][] = [];
  readonly #segments = new Map<number, { size: number; expandable: boolean }>();
  readonly #blocks = new Map<number, Block>();
  readonly #addressOfId = new Map<number, number>();

  /** An export whose trace entries are timed `time_us` = event index (the trace has no clock). */
  constructor() {
    const out = this.#stream;
    out.emptyDict();
    out.mark();
    out.value("device_traces");
    out.emptyList();
    out.mark();
    out.emptyList();
  }

  #entry(action: string, address: number, size: number): void {
    if (this.#batch === 0) this.#stream.mark();
    this.#stream.value({ action, addr: address, size, stream: 0, time_us: this.#time, frames: [] });
    this.#actions[action] = (this.#actions[action] ?? 0) + 1;
    this.#entries += 1;
    this.#batch += 1;
    if (this.#batch === BATCH) {
      this.#stream.appends();
      this.#batch = 0;
    }
  }

  /** The replay source's call (a {@link SourceListener}): a segment made. */
  segmentAlloc(address: number, bytes: number): void {
    this.#segments.set(address, { size: bytes, expandable: false });
    this.#pending.push(["segment_alloc", address, bytes]);
  }

  /** The replay source's call (a {@link SourceListener}): a segment given back. */
  segmentFree(address: number, bytes: number): void {
    this.#segments.delete(address);
    this.#pending.push(["segment_free", address, bytes]);
  }

  /** The replay source's call (a {@link SourceListener}): memory mapped into an expandable segment. */
  segmentMap(address: number, bytes: number): void {
    this.#segments.set(address, { size: bytes, expandable: true });
    this.#pending.push(["segment_map", address, bytes]);
  }

  /** The replay source's call (a {@link SourceListener}): memory of an expandable segment unmapped. */
  segmentUnmap(address: number, bytes: number): void {
    this.#segments.delete(address);
    this.#pending.push(["segment_unmap", address, bytes]);
  }

  #flush(): void {
    for (const [action, address, bytes] of this.#pending) this.#entry(action, address, bytes);
    this.#pending.length = 0;
  }

  /** After each event of the exported policy: `applied` is what it did to an allocation (`"a"` only). */
  event(event: readonly unknown[], applied: Applied | undefined): void {
    const id = event[1] as number;
    switch (event[0]) {
      case "a":
        // What the source did for this allocation (cache trimmed to make room, a segment made) comes first.
        this.#flush();
        if (applied !== undefined && applied.address !== undefined && applied.charged > 0) {
          this.#entry("alloc", applied.address, applied.charged);
          this.#blocks.set(applied.address, {
            size: applied.charged,
            requested: event[2] as number,
            pending: false,
          });
          this.#addressOfId.set(id, applied.address);
        }
        break;
      case "f":
      case "q": {
        const address = this.#addressOfId.get(id);
        const block = address === undefined ? undefined : this.#blocks.get(address);
        if (address !== undefined && block !== undefined) {
          this.#entry("free_requested", address, block.size);
          // A free with a view moved away completes when the view is given back ("r").
          if (event[0] === "f") {
            this.#entry("free_completed", address, block.size);
            this.#blocks.delete(address);
            this.#addressOfId.delete(id);
          } else block.pending = true;
        }
        break;
      }
      case "r": {
        const address = this.#addressOfId.get(id);
        const block = address === undefined ? undefined : this.#blocks.get(address);
        if (address !== undefined && block !== undefined) {
          this.#entry("free_completed", address, block.size);
          this.#blocks.delete(address);
          this.#addressOfId.delete(id);
        }
        break;
      }
    }
    this.#flush();
    this.#time += 1;
  }

  /** The segments held at the end, each with its blocks in address order (the gaps inactive). */
  #finalSegments(): PickleValue[] {
    const blocks = [...this.#blocks.entries()].sort((a, b) => a[0] - b[0]);
    const segments = [...this.#segments.entries()].sort((a, b) => a[0] - b[0]);
    let next = 0;
    return segments.map(([address, segment]) => {
      const end = address + segment.size;
      const inside: PickleValue[] = [];
      let cursor = address;
      let allocated = 0;
      let requested = 0;
      while (next < blocks.length && (blocks[next] as [number, Block])[0] < end) {
        const [at, block] = blocks[next] as [number, Block];
        next += 1;
        if (at < address) continue;
        if (at > cursor)
          inside.push({
            address: cursor,
            size: at - cursor,
            requested_size: 0,
            state: "inactive",
            frames: [],
          });
        inside.push({
          address: at,
          size: block.size,
          requested_size: block.requested,
          state: block.pending ? "active_pending_free" : "active_allocated",
          frames: [],
        });
        allocated += block.size;
        requested += block.requested;
        cursor = at + block.size;
      }
      if (cursor < end)
        inside.push({
          address: cursor,
          size: end - cursor,
          requested_size: 0,
          state: "inactive",
          frames: [],
        });
      return {
        device: 0,
        address,
        total_size: segment.size,
        allocated_size: allocated,
        active_size: allocated,
        requested_size: requested,
        stream: 0,
        segment_type: segment.size <= 1024 * 1024 ? "small" : "large",
        segment_pool_id: [0, 0],
        is_expandable: segment.expandable,
        frames: [],
        blocks: inside,
      };
    });
  }

  /** The snapshot as a pickle, and what it holds. Call once, after the last event. */
  finish(): { pickle: Uint8Array; counts: TorchExportCounts } {
    const out = this.#stream;
    if (this.#batch > 0) out.appends();
    this.#batch = 0;
    out.appends(); // the device's list into device_traces
    const segments = this.#finalSegments();
    out.value("segments");
    out.value(segments);
    out.value("allocator_settings");
    out.value({ PYTORCH_CUDA_ALLOC_CONF: "", written_by: "@nuvec/memory-view" });
    out.setItems();
    const blocks = segments.reduce<number>(
      (sum, segment) => sum + ((segment as { blocks: unknown[] }).blocks.length ?? 0),
      0,
    );
    return {
      pickle: out.done(),
      counts: { entries: this.#entries, actions: { ...this.#actions }, segments: segments.length, blocks },
    };
  }
}
