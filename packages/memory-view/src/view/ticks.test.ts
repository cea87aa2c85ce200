// The axis ticks over many ranges and widths: round values only, within the range, the finest step whose
// labels (measured as a proportional font is: digits, letters and spaces of their own widths) never touch.
import { describe, expect, it } from "vitest";
import { memoryViewTicks, type Tick } from "./ticks.js";

const { ticks, countLabel, byteLabel } = memoryViewTicks();

// Advance widths of 12px system-ui (DejaVu Sans, as Debian's Chromium draws it), in pixels.
const WIDTHS: Record<string, number> = { ",": 3.8, ".": 3.8, " ": 3.8, "-": 4.3, B: 8.2, K: 8.3, M: 10.4 };
const measure = (label: string) =>
  [...label].reduce((sum, character) => sum + (WIDTHS[character] ?? (/\d/.test(character) ? 7.6 : 7.4)), 0);
const KiB = 1024;
const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

function isRoundCount(step: number): boolean {
  const power = 10 ** Math.floor(Math.log10(step));
  return [1, 2, 5].includes(step / power);
}

function isRoundBytes(step: number): boolean {
  let unit = 1;
  while (step / unit >= 1024) unit *= 1024;
  const factor = step / unit;
  return Number.isInteger(Math.log2(factor)) && factor <= 512;
}

/** Checks `found` as the axis shows it: no two labels closer than half their widths each and the gap. */
function checkApart(found: Tick[], min: number, max: number, length: number, gap: number): void {
  for (let index = 1; index < found.length; index += 1) {
    const before = found[index - 1] as Tick;
    const after = found[index] as Tick;
    const room = ((after.value - before.value) / (max - min)) * length;
    expect(room, `${before.label} | ${after.label} on ${length}px`).toBeGreaterThanOrEqual(
      (measure(before.label) + measure(after.label)) / 2 + gap,
    );
  }
}

describe("axis ticks", () => {
  const lengths = [120, 300, 480, 640, 800, 1280, 1920, 3840];

  it("counts: round steps, inside the range, apart at every width, as fine as fits", () => {
    let checked = 0;
    for (const max of [1, 7, 10, 99, 1000, 5024, 24_000, 542_222, 36_000_000, 2 ** 32]) {
      for (const min of [0, Math.floor(max / 3), max - Math.max(1, Math.floor(max / 1000))]) {
        if (min >= max) continue;
        for (const length of lengths) {
          const found = ticks(min, max, { kind: "count", length, extent: measure, gap: 12 });
          expect(found.length).toBeGreaterThanOrEqual(1);
          const step = found.length > 1 ? (found[1] as Tick).value - (found[0] as Tick).value : 0;
          if (found.length > 1) expect(isRoundCount(step), `step ${step}`).toBe(true);
          for (const tick of found) {
            expect(tick.value).toBeGreaterThanOrEqual(min);
            expect(tick.value).toBeLessThanOrEqual(max);
            if (step > 0) expect(tick.value % step).toBe(0);
            expect(tick.label).toBe(countLabel(tick.value));
          }
          checkApart(found, min, max, length, 12);
          // As fine as fits: the next finer round step's labels would touch (or exceed a tick per 2px).
          if (found.length > 1 && step > 1) {
            const finer = [step / 2, step / 2.5, step / 5].find(
              (value) => isRoundCount(value) && Number.isInteger(value),
            );
            if (finer !== undefined) {
              const first = Math.ceil(min / finer) * finer;
              const denser: Tick[] = [];
              for (let value = first; value <= max; value += finer)
                denser.push({ value, label: countLabel(value) });
              const touches = denser.some((tick, index) => {
                const next = denser[index + 1];
                if (next === undefined) return false;
                return (
                  ((next.value - tick.value) / (max - min)) * length <
                  (measure(tick.label) + measure(next.label)) / 2 + 12
                );
              });
              expect(touches || (max - min) / finer > length / 2, `${finer} would fit on ${length}px`).toBe(
                true,
              );
            }
          }
          checked += 1;
        }
      }
    }
    expect(checked).toBe(240);
  });

  it("bytes: binary steps (1, 2, 4 … 512 of B, KiB, MiB, GiB), one unit per axis, apart at every height and width", () => {
    for (const max of [
      100,
      5 * KiB,
      37 * MiB,
      700 * MiB,
      1.06 * GiB,
      4.7 * GiB,
      80 * GiB,
      1.5 * 1024 * GiB,
    ]) {
      for (const length of [60, 200, 460, 1080, ...lengths]) {
        for (const extent of [() => 14, measure]) {
          const found = ticks(0, max, { kind: "bytes", length, extent, gap: 10 });
          const step = found.length > 1 ? (found[1] as Tick).value - (found[0] as Tick).value : 0;
          if (found.length > 1) expect(isRoundBytes(step), `step ${step} up to ${max}`).toBe(true);
          const units = new Set(
            found.filter((tick) => tick.value > 0).map((tick) => tick.label.split(" ")[1]),
          );
          expect(units.size).toBeLessThanOrEqual(1);
          for (let index = 1; index < found.length; index += 1) {
            const before = found[index - 1] as Tick;
            const after = found[index] as Tick;
            expect(((after.value - before.value) / max) * length).toBeGreaterThanOrEqual(
              (extent(before.label) + extent(after.label)) / 2 + 10,
            );
          }
        }
      }
    }
  });

  it("labels bytes in the axis's unit with the decimals the step needs, or in the step's own unit", () => {
    expect(byteLabel(0, 512 * MiB, 4.7 * GiB)).toBe("0");
    expect(byteLabel(1.5 * GiB, 512 * MiB, 4.7 * GiB)).toBe("1.5 GiB");
    expect(byteLabel(3 * GiB, 1 * GiB, 4.7 * GiB)).toBe("3 GiB");
    expect(byteLabel(768 * MiB, 256 * MiB, 4.7 * GiB)).toBe("0.75 GiB");
    expect(byteLabel(384 * MiB, 128 * MiB, 4.7 * GiB)).toBe("384 MiB");
    expect(byteLabel(96 * KiB, 32 * KiB, 100 * KiB)).toBe("96 KiB");
    expect(countLabel(542_222)).toBe("542,222");
    expect(countLabel(0)).toBe("0");
    expect(countLabel(1000)).toBe("1,000");
  });

  it("places ticks by a position of the caller's (marks at their events) and keeps them apart there", () => {
    // 40 marks, bunched: the first 30 within the first tenth of the axis.
    const at = Array.from({ length: 40 }, (_, mark) => (mark < 30 ? mark * 10 : 300 + (mark - 30) * 1000));
    const end = 10_000;
    const length = 800;
    const position = (mark: number) => ((at[mark] as number) / end) * length;
    const found = ticks(0, 39, {
      kind: "count",
      length,
      extent: measure,
      gap: 12,
      position,
      label: (mark) => `step ${mark}`,
    });
    for (let index = 1; index < found.length; index += 1) {
      const before = found[index - 1] as Tick;
      const after = found[index] as Tick;
      expect(position(after.value) - position(before.value)).toBeGreaterThanOrEqual(
        (measure(before.label) + measure(after.label)) / 2 + 12,
      );
    }
    // Labels about 45px wide: a step of 5 would fit 40 even marks on 800px; of its multiples, those that stand
    // clear of the last one kept.
    expect(found.map((tick) => tick.value)).toEqual([0, 35]);
    expect(found.map((tick) => tick.label)).toEqual(["step 0", "step 35"]);
  });

  it("gives nothing for an empty or impossible range, and one tick where none fit two", () => {
    expect(ticks(5, 5, { kind: "count", length: 800, extent: measure })).toEqual([]);
    expect(ticks(0, Number.NaN, { kind: "count", length: 800, extent: measure })).toEqual([]);
    expect(ticks(0, 10, { kind: "count", length: 0, extent: measure })).toEqual([]);
    expect(ticks(0, 1e9, { kind: "count", length: 20, extent: measure })).toEqual([{ value: 0, label: "0" }]);
  });
});
