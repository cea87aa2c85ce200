// Progress for people: a live line on a terminal, plain lines otherwise (CI logs, pipes).

/** Reports the progress of one step. */
export interface Progress {
  update(fraction: number): void;
  done(summary?: string): void;
}

/** A progress line for `label` on `stream` (a redrawn line on a TTY; start and end lines otherwise). */
export function progress(label: string, stream: NodeJS.WriteStream = process.stdout): Progress {
  const tty = stream.isTTY === true;
  let last = -1;
  if (!tty) stream.write(`${label} …\n`);
  return {
    update(fraction) {
      if (!tty) return;
      const percent = Math.floor(Math.max(0, Math.min(1, fraction)) * 100);
      if (percent === last) return;
      last = percent;
      const width = 30;
      const filled = Math.round((percent / 100) * width);
      stream.write(
        `\r${label} [${"#".repeat(filled)}${" ".repeat(width - filled)}] ${String(percent).padStart(3)}%`,
      );
    },
    done(summary) {
      if (tty) stream.write(`\r${" ".repeat(label.length + 40)}\r`);
      stream.write(`${label}: ${summary ?? "done"}\n`);
    },
  };
}
