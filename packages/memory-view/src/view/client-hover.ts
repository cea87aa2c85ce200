// The memory view's tooltip text: what the hover says about the allocation under the pointer (size, life,
// what each policy charges, its label and stack) or, off the bands, about the event's figures. Self-contained
// like the core (the report inlines `memoryViewHover`'s source): everything it needs comes in as arguments.
import type { CoreModel, MemoryViewCore } from "./core.js";

/** What the tooltip's text is made from. */
export interface HoverView {
  core: MemoryViewCore;
  model: CoreModel;
  meta: { events: number; policies: string[]; external: string[]; mapped: boolean };
  /** The selected policy's index. */
  policy: number;
  /** Per policy, the bytes it charges each allocation. */
  charged: Float64Array[];
  labels: Int32Array;
  labelTexts: string[];
  stacks: Int32Array;
  stackTexts: string[][];
  /** The line about the marks for an event (see the axes' `markLine`). */
  markLine(event: number): string[];
}

/** The tooltip's text, as {@link memoryViewHover} returns it. */
export interface MemoryViewHover {
  /** The text for allocation `index` (when the pointer is on its band), else for the event `rep`. */
  text(view: HoverView, rep: number, index: number | undefined): string;
  /** A stack's frames for the hover: the innermost 16, each cut to 160 characters, then how many more. */
  stackLines(frames: string[]): string[];
}

/** The memory view's tooltip text. */
export function memoryViewHover(): MemoryViewHover {
  function stackLines(frames: string[]): string[] {
    return [
      ...frames.slice(0, 16).map((frame) => `  ${frame.length > 160 ? `${frame.slice(0, 159)}…` : frame}`),
      ...(frames.length > 16 ? [`  … ${frames.length - 16} more frames`] : []),
    ];
  }

  function text(view: HoverView, rep: number, index: number | undefined): string {
    const { core, model, meta } = view;
    if (index !== undefined) {
      const start = model.start[index] as number;
      const end = model.end[index] as number;
      const size = model.size[index] as number;
      const label = view.labels[index] as number;
      return [
        `allocation ${index} · ${core.formatBytes(size)} (${size} B) · ${core.SIZE_CLASSES[core.sizeClass(size)]?.label}`,
        `allocated at event ${start}, ${end >= meta.events ? "never freed" : `freed at event ${end}`}`,
        `age ${rep - start} events here; lives ${end - start} events`,
        ...view.markLine(start).map((line) => `allocated ${line}`),
        ...meta.policies.map(
          (name, policy) => `${name}: charged ${core.formatBytes(view.charged[policy]?.[index] ?? 0)}`,
        ),
        ...(label >= 0 ? [view.labelTexts[label] ?? ""] : []),
        ...stackLines(view.stackTexts[view.stacks[index] ?? -1] ?? []),
      ].join("\n");
    }
    const policy = model.policies[view.policy] as {
      name: string;
      active: Float64Array;
      reserved: Float64Array;
    };
    const live = model.live[rep] as number;
    const active = policy.active[rep] as number;
    const reserved = policy.reserved[rep] as number;
    return [
      `event ${rep}`,
      ...view.markLine(rep),
      `live ${core.formatBytes(live)} · ${policy.name}: active ${core.formatBytes(active)}, cache ${core.formatBytes(reserved - active)}, reserved ${core.formatBytes(reserved)}`,
      ...meta.external.map(
        (name, index) => `${name}: ${core.formatBytes(model.external[index]?.values[rep] ?? 0)}`,
      ),
      ...(meta.mapped ? [`mapped files ${core.formatBytes(model.mapped[rep] as number)}`] : []),
    ].join("\n");
  }

  return { text, stackLines };
}
