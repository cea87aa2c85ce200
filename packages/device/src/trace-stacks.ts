// The JavaScript call stack of an allocation, for a trace started with `{ stacks: N }`: V8's structured
// capture (`Error.captureStackTrace`) of at most N frames above the Device's own, one frame a line. Where
// the engine has no such capture, the stack is empty.

type CaptureStackTrace = (target: object, below?: (...args: never[]) => unknown) => void;

const capture = (Error as unknown as { captureStackTrace?: CaptureStackTrace }).captureStackTrace;

/**
 * The `frames` innermost frames of the stack above `below` and the `skip` frames right above it (the
 * Device's own), innermost first, one a line (`"at fn (file:line:column)"`); `""` where the engine cannot say.
 */
export function captureStack(frames: number, skip: number, below: (...args: never[]) => unknown): string {
  if (typeof capture !== "function") return "";
  const holder: { stack?: unknown } = {};
  const errorClass = Error as { stackTraceLimit?: number };
  let text: unknown;
  // The allocation is made when this runs: nothing here may throw (a frozen Error, a program's own
  // Error.prepareStackTrace that throws), so a failure is an empty stack.
  try {
    const limit = errorClass.stackTraceLimit;
    errorClass.stackTraceLimit = frames + skip;
    try {
      capture.call(Error, holder, below);
    } finally {
      errorClass.stackTraceLimit = limit;
    }
    text = holder.stack;
  } catch {
    return "";
  }
  // A program's own Error.prepareStackTrace may make anything of it: only text is read.
  if (typeof text !== "string") return "";
  const lines = text.split("\n");
  // The first line is the (empty) message; then one "    at …" line a frame.
  let out = "";
  for (let index = 1 + skip; index < lines.length; index++) {
    const frame = (lines[index] as string).trim();
    if (frame === "") continue;
    out = out === "" ? frame : `${out}\n${frame}`;
  }
  return out;
}
