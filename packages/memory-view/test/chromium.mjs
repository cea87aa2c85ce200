// Debian's chromium, as the view's browser test launches it: headless, no sandbox (containers), nothing that
// reaches the network or updates itself.
import { existsSync } from "node:fs";
import { chromium } from "playwright-core";

/** The chromium executable (Debian's package), or undefined where there is none. */
export const chromiumExecutable = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((path) =>
  existsSync(path),
);

/** Launches headless chromium from `executable` with playwright-core. */
export function launchChromium(executable) {
  return chromium.launch({
    executablePath: executable,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
}
