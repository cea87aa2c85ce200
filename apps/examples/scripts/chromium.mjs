// Debian's chromium, launched as the memory view's own browser tests launch it (one copy of the flags: the
// memory view package's test/chromium.mjs).
export { chromiumExecutable, launchChromium } from "../../../packages/memory-view/test/chromium.mjs";
