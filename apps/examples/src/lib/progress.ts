// Progress for people: a live line on a terminal, plain lines otherwise (CI logs, pipes).

/** Reports the progress of one step. */
export interface Progress {
  update(fraction: number): void;
  done(summary?: string): void;
}

/** The terminal's width for `stream` (80 when it does not say), so no line ever wraps. */
export function columnsOf(stream: NodeJS.WriteStream = process.stdout): number {
  const columns = stream.columns;
  return typeof columns === "number" && columns > 0 ? columns : 80;
}

/** `text` cut to `width` characters, with an ellipsis where it was cut. */
export function fit(text: string, width: number): string {
  if (text.length <= width) return text;
  return width <= 1 ? text.slice(0, Math.max(0, width)) : `${text.slice(0, width - 1)}…`;
}

/**
 * A progress line for `label` on `stream`: on a TTY one line redrawn in place, never wider than the terminal
 * (`stream.columns`, read at each redraw) so it cannot wrap and leave stale rows; otherwise a start line and an
 * end line. `quiet` draws nothing at all (e.g. `--json`).
 */
export function progress(
  label: string,
  stream: NodeJS.WriteStream = process.stdout,
  options: { quiet?: boolean; ttyOnly?: boolean } = {},
): Progress {
  const tty = stream.isTTY === true;
  const silent = options.quiet === true || (options.ttyOnly === true && !tty);
  let last = -1;
  if (!tty && !silent) stream.write(`${fit(label, 79)} …\n`);
  return {
    update(fraction) {
      if (!tty || silent) return;
      const percent = Math.floor(Math.max(0, Math.min(1, fraction)) * 100);
      if (percent === last) return;
      last = percent;
      // The last column stays free: writing into it makes some terminals wrap.
      const columns = columnsOf(stream) - 1;
      const width = Math.max(0, Math.min(30, columns - 20));
      const filled = Math.round((percent / 100) * width);
      const bar = width > 0 ? ` [${"#".repeat(filled)}${" ".repeat(width - filled)}]` : "";
      const tail = `${bar} ${String(percent).padStart(3)}%`;
      stream.write(`\r\x1b[2K${fit(label, Math.max(0, columns - tail.length))}${tail}`);
    },
    done(summary) {
      if (silent) return;
      if (tty) stream.write("\r\x1b[2K");
      stream.write(`${fit(`${label}: ${summary ?? "done"}`, (tty ? columnsOf(stream) : 80) - 1)}\n`);
    },
  };
}
