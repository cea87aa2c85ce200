// The compact form a TraceRecorder keeps its events in: words of a Float64Array, in chunks, one to three
// words an event (8 to 24 bytes; an allocation and its free 24 bytes together). The first word of an event is
// `id * 16 + tag`; the tag says how many words follow. Strings (mark names, labels, stack frames) sit in the
// recorder's tables, named by index. Decoded back to events or to NDJSON text on demand.
import type { TraceEvent } from "./trace-format.js";

/** An event's first-word tags. */
export enum Tag {
  /** `["a", id, bytes]`: one word follows (bytes). */
  Allocate = 0,
  /** `["a", id, bytes, label]`: bytes, label. */
  AllocateLabelled = 1,
  /** `["a", id, bytes, label | null, stack]`: bytes, label (-1: null), stack. */
  AllocateStack = 2,
  Free = 3,
  /** `["m", id, length]`: length. */
  Map = 4,
  /** `["m", id, length, label]`: length, label. */
  MapLabelled = 5,
  Unmap = 6,
  /** `["l", kind, bytes]`: the kind (0 memory, 1 cache, 2 wired) in the id's place; bytes. */
  Limit = 7,
  ClearCache = 8,
  ResetPeak = 9,
  Quarantine = 10,
  GiveBack = 11,
  /** `["k", name]`: the name's index in the marks table in the id's place. */
  Mark = 12,
  /** `["n", id, text]`: the text is the labels table's entry `id`. */
  Label = 13,
  /** `["s", id, frames]`: the frames are the stacks table's entry `id`. */
  Stack = 14,
}

/** Words after an event's first, by tag. */
export const WORDS_AFTER = [1, 2, 3, 0, 1, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0] as const;

/** The limit kinds, by the number an "l" event stores. */
export const LIMIT_KINDS = ["memory", "cache", "wired"] as const;

/** Words per chunk: 512 KiB, a few tens of thousands of events. */
export const CHUNK_WORDS = 1 << 16;

/** The strings events name: mark names, label texts, stack frames. */
export interface TraceTables {
  readonly marks: readonly string[];
  readonly labels: readonly string[];
  readonly stacks: readonly (readonly string[])[];
}

/** Calls `visit` with each event of `words[0, length)` as a trace event. */
export function decodeWords(
  words: Float64Array,
  length: number,
  tables: TraceTables,
  visit: (event: TraceEvent) => void,
): void {
  for (let at = 0; at < length; ) {
    const first = words[at] as number;
    const tag = first % 16;
    const id = (first - tag) / 16;
    const next = words[at + 1] as number;
    switch (tag) {
      case Tag.Allocate:
        visit(["a", id, next]);
        break;
      case Tag.AllocateLabelled:
        visit(["a", id, next, words[at + 2] as number]);
        break;
      case Tag.AllocateStack: {
        const label = words[at + 2] as number;
        visit(["a", id, next, label < 0 ? null : label, words[at + 3] as number]);
        break;
      }
      case Tag.Free:
        visit(["f", id]);
        break;
      case Tag.Map:
        visit(["m", id, next]);
        break;
      case Tag.MapLabelled:
        visit(["m", id, next, words[at + 2] as number]);
        break;
      case Tag.Unmap:
        visit(["u", id]);
        break;
      case Tag.Limit:
        visit(["l", LIMIT_KINDS[id] as (typeof LIMIT_KINDS)[number], next]);
        break;
      case Tag.ClearCache:
        visit(["c"]);
        break;
      case Tag.ResetPeak:
        visit(["p"]);
        break;
      case Tag.Quarantine:
        visit(["q", id]);
        break;
      case Tag.GiveBack:
        visit(["r", id]);
        break;
      case Tag.Mark:
        visit(["k", tables.marks[id] as string]);
        break;
      case Tag.Label:
        visit(["n", id, tables.labels[id] as string]);
        break;
      case Tag.Stack:
        visit(["s", id, tables.stacks[id] as readonly string[]]);
        break;
    }
    at += 1 + (WORDS_AFTER[tag] as number);
  }
}

/**
 * The NDJSON lines of `words[0, length)`, each ended by a newline, exactly as `JSON.stringify` writes the
 * events (strings through `JSON.stringify`, numbers and `null` as they are).
 */
export function wordsToNdjson(words: Float64Array, length: number, tables: TraceTables): string {
  let text = "";
  for (let at = 0; at < length; ) {
    const first = words[at] as number;
    const tag = first % 16;
    const id = (first - tag) / 16;
    const after = WORDS_AFTER[tag] as number;
    if (tag === Tag.Allocate) text += `["a",${id},${words[at + 1]}]\n`;
    else if (tag === Tag.Free) text += `["f",${id}]\n`;
    else if (tag === Tag.AllocateLabelled) text += `["a",${id},${words[at + 1]},${words[at + 2]}]\n`;
    else
      decodeWords(words.subarray(at, at + 1 + after), 1 + after, tables, (event) => {
        text += `${JSON.stringify(event)}\n`;
      });
    at += 1 + after;
  }
  return text;
}

/**
 * NDJSON bytes of chunks, written into one buffer that is reused (grown when a chunk needs more): the same
 * lines as {@link wordsToNdjson}, with no string made for the common events (what a file writer wants: no
 * garbage for the collector).
 */
export class NdjsonEncoder {
  #bytes = new Uint8Array(1 << 20);
  #at = 0;
  readonly #text = new TextEncoder();

  /** The NDJSON bytes of `words[0, length)`: a view of the encoder's buffer, valid until the next call. */
  encode(words: Float64Array, length: number, tables: TraceTables): Uint8Array {
    this.#at = 0;
    for (let at = 0; at < length; ) {
      const first = words[at] as number;
      const tag = first % 16;
      const id = (first - tag) / 16;
      const after = WORDS_AFTER[tag] as number;
      if (tag === Tag.Allocate || tag === Tag.AllocateLabelled || tag === Tag.Free) {
        this.#room(64);
        this.#ascii(tag === Tag.Free ? '["f",' : '["a",');
        this.#integer(id);
        if (tag !== Tag.Free) {
          this.#byte(44);
          this.#integer(words[at + 1] as number);
          if (tag === Tag.AllocateLabelled) {
            this.#byte(44);
            this.#integer(words[at + 2] as number);
          }
        }
        this.#byte(93);
        this.#byte(10);
      } else {
        decodeWords(words.subarray(at, at + 1 + after), 1 + after, tables, (event) => {
          const line = `${JSON.stringify(event)}\n`;
          this.#room(line.length * 3);
          this.#at += this.#text.encodeInto(line, this.#bytes.subarray(this.#at)).written;
        });
      }
      at += 1 + after;
    }
    return this.#bytes.subarray(0, this.#at);
  }

  #room(count: number): void {
    if (this.#at + count <= this.#bytes.length) return;
    let size = this.#bytes.length * 2;
    while (size < this.#at + count) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.#bytes.subarray(0, this.#at));
    this.#bytes = grown;
  }

  #byte(value: number): void {
    this.#bytes[this.#at++] = value;
  }

  #ascii(text: string): void {
    for (let index = 0; index < text.length; index++) this.#bytes[this.#at++] = text.charCodeAt(index);
  }

  /** A non-negative safe integer's digits. */
  #integer(value: number): void {
    if (value < 10) {
      this.#bytes[this.#at++] = 48 + value;
      return;
    }
    let digits = 0;
    for (let rest = value; rest >= 1; rest = Math.floor(rest / 10)) digits++;
    let end = this.#at + digits;
    this.#at = end;
    for (let rest = value; rest >= 1; rest = Math.floor(rest / 10)) this.#bytes[--end] = 48 + (rest % 10);
  }
}
