// The refusals of the Device's streams and kernels, each one of the family's kinds (docs/ERRORS.md).
import { ArgumentError, StateError, UnsupportedError } from "@nuvec/stats";

/** A stream call on a backend that has no streams (`newStream`/`loadModule` absent). */
export function streamsUnsupported(
  operation: string,
  backend: { name: string; platform: string },
): UnsupportedError {
  return new UnsupportedError(
    "ERR_NUVEC_STREAMS_UNSUPPORTED",
    `${operation}: the ${backend.platform} backend "${backend.name}" has no streams or kernels`,
  );
}

/** A stream, module or event used after its release (`what`: "stream", "module", "event"). */
export function releasedObject(operation: string, what: string): StateError {
  return new StateError("ERR_NUVEC_RELEASED", `${operation}: the ${what} was released`);
}

/** A stream, kernel, module or event of another Device given to this one. */
export function foreignObject(operation: string, argument: string, what: string): ArgumentError {
  return new ArgumentError(argument, `${operation}: the ${what} belongs to another device`);
}

/** A bad argument of a stream call: `message` says what was expected and what came. */
export function badArgument(operation: string, argument: string, message: string): ArgumentError {
  return new ArgumentError(argument, `${operation}: ${argument} ${message}`);
}
