import type { Browser } from "playwright-core";

/** The chromium executable (Debian's package), or undefined where there is none. */
export const chromiumExecutable: string | undefined;
/** Launches headless chromium from `executable` with playwright-core. */
export function launchChromium(executable: string): Promise<Browser>;
