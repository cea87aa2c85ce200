// Device.open's checks, before anything is made: every option by its declaration (each read once), the
// environment, the backend (read and checked once) and the options that need the backend's facts.
import { loadNativeBackend, type NativeBackend } from "@nuvec/metal-native";
import { checkedBackend } from "./backend-shape.js";
import { checkEnvironment } from "./environment.js";
import { wiredLimitTooLarge } from "./errors.js";
import { checkMetalOptions } from "./metal-options.js";
import { checkOpenOptions, type DeviceOptions } from "./options.js";
import { DEVICE_OPEN } from "./schemas.js";

/** @internal What Device.open checked: the Device is made from these, never from the options given. */
export interface Opening {
  /** The options as the check returned them. */
  options: DeviceOptions;
  /** Residency's `maxPercentPerSet`, checked. */
  maxPercentPerSet: string | undefined;
  /** The backend as given (or loaded): asked whether it was closed, handed out by `native.backend`. */
  givenBackend: NativeBackend;
  /** The backend's methods and facts, read and checked once: what the Device calls. */
  backend: NativeBackend;
}

/** @internal Checks Device.open's options and backend; throws the first refusal, having made nothing. */
export function checkOpening(given: DeviceOptions): Opening {
  const options: DeviceOptions = DEVICE_OPEN.parse(given);
  const maxPercentPerSet = checkOpenOptions(options);
  checkEnvironment(options.safetyNet !== false);
  const givenBackend = options.backend ?? loadNativeBackend();
  // Read and checked once: the Device calls what it read here, whatever the object does later.
  const backend = checkedBackend(givenBackend);
  if (options.metal !== undefined) checkMetalOptions(options.metal, backend);
  if (options.wiredLimit !== undefined && options.wiredLimit > backend.recommendedMaxWorkingSetSize) {
    throw wiredLimitTooLarge(options.wiredLimit, backend.recommendedMaxWorkingSetSize, "wiredLimit");
  }
  return { options, maxPercentPerSet, givenBackend, backend };
}
