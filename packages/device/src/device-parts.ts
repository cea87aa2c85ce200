// What a Device is made of, and how the parts are wired together: MLX's caching allocator, residency, the
// stream order and streams, the figures, the quarantine, the mapped files, the safety net and the books of
// live and pending buffers. The Device (device.ts) holds one DeviceParts and runs its public methods and the
// buffers' free path over it; the pending frees and the teardown of everything at close() live here.
import type { CachingAllocator } from "@nuvec/allocator";
import {
  deviceFacts,
  type NativeAllocation,
  type NativeBackend,
  type NativeBuffer,
  type NativeResidencySet,
} from "@nuvec/metal-native";
import type { Residency } from "@nuvec/residency";
import { checkArgument, type Teardown } from "@nuvec/stats";
import { settleAfter } from "./deferred-free.js";
import type { Device } from "./device.js";
import type { BufferState } from "./device-buffer.js";
import { DeviceMappings } from "./device-mappings.js";
import type { Opening } from "./device-open.js";
import { wiredLimitTooLarge } from "./errors.js";
import { DeviceFigures } from "./figures.js";
import { KeepAliveTimer } from "./keep-alive.js";
import { LiveBuffers } from "./live-buffers.js";
import { mappedFileState } from "./mapped-file.js";
import { DeviceNative } from "./native-access.js";
import type { DeviceInfo } from "./options.js";
import { allocatorOver, residencyOver } from "./parts.js";
import { Quarantine } from "./quarantine.js";
import { SafetyNet } from "./safety-net.js";
import { LIMIT } from "./schemas.js";
import { DeviceStreams } from "./streams/device-streams.js";
import { StreamOrder } from "./streams/order.js";
import { type DeviceTrace, type TraceOpening, traceOpening } from "./trace.js";
import { WiringWarning } from "./wiring-warning.js";

/** @internal The parts of one Device, wired together; the Device's free path is `reclaim`'s target. */
export class DeviceParts {
  readonly backend: NativeBackend;
  readonly allocator: CachingAllocator<NativeBuffer>;
  readonly residency: Residency<NativeAllocation, NativeResidencySet>;
  // The live buffers: what close() releases and a trace opens with. Their count is the allocator's
  // (`liveBuffers`).
  readonly liveBuffers = new LiveBuffers();
  // The mapped files, live and pending (device-mappings.ts); their count is the allocator's (`mappings`).
  readonly mapped: DeviceMappings;
  // Frees deferred with `{ after }` whose promise has not settled: still counted (`active`), so a trace
  // started now opens with them.
  readonly pendingFrees = new Set<BufferState>();
  readonly safetyNet: SafetyNet | undefined;
  readonly figures: DeviceFigures;
  // Freed buffers the backend holds for a view moved away: counted in `quarantined` until given back.
  readonly quarantine: Quarantine;
  closed = false;
  closing = false;
  readonly keepAlive = new KeepAliveTimer();
  // Runs what may wire memory, and warns once when the platform refuses.
  readonly wiring: WiringWarning;
  trace: DeviceTrace | undefined = undefined;
  // Every residency set made (Residency keeps them until close), for native.residencySets().
  readonly residencySets: NativeResidencySet[] = [];
  readonly native: DeviceNative;
  // Stream-ordered free (fences, buffers held for several streams) and the streams, modules and events.
  readonly order: StreamOrder;
  readonly streams: DeviceStreams;

  /** The parts of `device` over what Device.open checked; `reclaim` frees a buffer the safety net found dropped. */
  constructor(device: Device, opening: Opening, reclaim: (state: BufferState) => void) {
    const { backend, options, maxPercentPerSet, givenBackend } = opening;
    this.backend = backend;
    // The allocator first: it checks the limits and the policy, and a refused option must not leave a
    // residency set made on the backend (Residency makes its first set at once).
    this.allocator = allocatorOver(
      backend,
      options,
      {
        // Every system buffer is tracked by residency while it exists; cached ones stay wired, as MLX.
        onAcquire: (buffer) => this.wiring.insert(buffer, false),
        onRelease: (buffer) => {
          // Memory a stream's work may still name is given back to the system only once that work ran.
          this.order.beforeRelease(buffer);
          this.residency.erase(buffer);
        },
        backendClosed: () => {
          try {
            return (givenBackend as { closed?: unknown }).closed === true;
          } catch {
            return false; // a backend whose `closed` throws is taken as open: its release reports itself
          }
        },
      },
      (space) => this.order.beforeRelease(space),
    );
    this.residency = residencyOver(backend, options, maxPercentPerSet, this.residencySets);
    this.wiring = new WiringWarning(backend, this.residency);
    this.order = new StreamOrder((state) => {
      this.allocator.free(state.allocation);
      this.trace?.free(state);
    });
    const isClosed = () => this.closed;
    this.streams = new DeviceStreams(device, backend, this.order, isClosed);
    this.figures = new DeviceFigures(this.allocator, this.residency, backend, this.order);
    this.quarantine = new Quarantine(
      this.allocator,
      (owner) => this.trace?.giveBack(owner),
      () => !this.closed,
    );
    this.mapped = new DeviceMappings({
      backend,
      allocator: this.allocator,
      residency: this.residency,
      quarantine: this.quarantine,
      wiring: this.wiring,
      figures: this.figures,
      trace: () => this.trace,
      settleLater: (pending, item, after, whileOpen, afterClose) =>
        this.settleLater(pending, item, after, whileOpen, afterClose),
    });
    this.native = new DeviceNative(device, backend, isClosed, this.residencySets, givenBackend);
    this.safetyNet = options.safetyNet === false ? undefined : new SafetyNet(reclaim, this.liveBuffers);
  }

  /**
   * Keeps a free deferred with `{ after }` in `pending` and counts it in `pendingFrees` until its promise
   * settles, then runs `whileOpen` or, once the device is closed (its allocator gone), `afterClose`, which
   * gives the memory straight back.
   */
  settleLater<T>(
    pending: Set<T>,
    item: T,
    after: PromiseLike<unknown>,
    whileOpen: () => void,
    afterClose: () => void,
  ): void {
    pending.add(item);
    this.figures.pendingFrees += 1;
    settleAfter(after, () => {
      this.figures.pendingFrees -= 1;
      pending.delete(item);
      if (!this.closed) whileOpen();
      else afterClose();
    });
  }

  /**
   * A buffer's deferred free settled after close(): the allocator gives back what its allocation holds (its
   * buffer, or its block's range and, with the last live block of its segment, the segment: an expandable
   * one's mappings and address space), and the last figures no longer count it.
   */
  releaseAfterClose(state: BufferState): void {
    if (state.allocation.buffer === undefined) return;
    const released = this.allocator.releaseAfterClose(state.allocation);
    this.figures.settledAfterClose(state.allocation.allocatedLength, 0, released);
  }

  /** What a trace started now opens with: the live and pending buffers and files, and the allocator's setup. */
  traceOpening(): TraceOpening {
    return {
      ...traceOpening(this.liveBuffers, this.mapped.live, {
        buffers: [...this.pendingFrees, ...this.order.heldStates()],
        mappings: this.mapped.pending,
        quarantined: this.quarantine.held(),
      }),
      allocator: this.allocator.replaySetup(),
    };
  }

  /** One of the allocator's limits, checked, set and recorded in the trace; returns the previous one. */
  setAllocatorLimit(which: "memory" | "cache", bytes: number): number {
    const method = which === "memory" ? "setMemoryLimit" : "setCacheLimit";
    bytes = checkArgument(LIMIT, bytes, "bytes", `${method}()`);
    const previous = this.allocator[method](bytes);
    this.trace?.limit(which, bytes);
    return previous;
  }

  /** Residency's wired limit, checked against the recommended working set, set and traced; returns the previous one. */
  setWiredLimit(bytes: number): number {
    bytes = checkArgument(LIMIT, bytes, "bytes", "setWiredLimit()");
    const maximum = this.backend.recommendedMaxWorkingSetSize;
    if (bytes > maximum) throw wiredLimitTooLarge(bytes, maximum);
    const previous = this.residency.wiredLimit;
    this.wiring.watch(() => this.residency.setWiredLimit(bytes), bytes > 0);
    this.trace?.limit("wired", bytes);
    return previous;
  }

  /** Restarts every peak at its quantity's value now, and records it in the trace. */
  resetPeak(): void {
    this.allocator.resetPeak();
    this.trace?.resetPeak();
  }

  /** Releases every cached buffer to the system, and records it in the trace. */
  clearCache(): void {
    this.allocator.clearCache();
    this.trace?.clearCache();
  }

  /** Renews the residency request of every non-empty residency set (a refusal warned about once). */
  refreshResidency(): void {
    this.wiring.watch(() => this.residency.refresh());
  }

  /** The backend's facts and the device's setup. */
  info(): DeviceInfo {
    return {
      ...deviceFacts(this.backend),
      policy: this.allocator.policy,
      residencySupported: this.residency.supported,
      residencySets: this.residency.setCount,
      gcLimit: this.allocator.gcLimit,
      closed: this.closed,
    };
  }

  /**
   * close()'s steps after the streams, each run by `teardown` (every one runs even when one throws): the live
   * buffers freed by `freeState` (their views detached), the safety net closed, the mapped files unmapped, the
   * cache cleared, the residency sets closed, the last figures kept, the allocator closed and a trace
   * streaming to a file written to its end.
   */
  release(teardown: Teardown, freeState: (state: BufferState) => void): void {
    const { liveBuffers, safetyNet, mapped } = this;
    for (let state = liveBuffers.newest; state !== undefined; state = liveBuffers.newest) {
      teardown.run(() => freeState(state));
      // A free that threw part way still takes the buffer off the list: it is dead to JavaScript now, and
      // the loop ends.
      if (state.live) {
        state.live = false;
        liveBuffers.unlink(state);
      }
      teardown.run(() => safetyNet?.remove(state));
    }
    teardown.run(() => safetyNet?.close());
    for (const file of [...mapped.live]) {
      teardown.run(() => mapped.unmap(file));
      if (mapped.live.has(file)) {
        mappedFileState(file).live = false;
        mapped.live.delete(file);
      }
    }
    teardown.run(() => this.allocator.clearCache());
    teardown.run(() => this.residency.close());
    teardown.run(() => this.figures.keepLast());
    teardown.run(() => this.allocator.close());
    const trace = this.trace;
    this.trace = undefined;
    teardown.run(() => trace?.stop("close()"));
  }
}
