// The one helper every package's tests use to look at an error: the error itself, for its class and fields.

/** Calls `action`, expects it to throw, and returns the error. */
export function thrown(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to throw, it returned");
}
