// The timer of Device.startResidencyKeepAlive: residency requests renewed on an interval, for macOS versions
// that drop residency after the GPU idles.

/** An interval timer that never keeps the process alive (unref'd); starting it again replaces the last. */
export class KeepAliveTimer {
  #timer: ReturnType<typeof setInterval> | undefined;

  /** Runs `tick` every `intervalMilliseconds` (already checked: a timer honours it as given). */
  start(intervalMilliseconds: number, tick: () => void): void {
    this.stop();
    const timer = setInterval(tick, intervalMilliseconds);
    timer.unref?.();
    this.#timer = timer;
  }

  /** Stops the timer, if running. */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
