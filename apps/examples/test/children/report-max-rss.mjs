// Preloaded (`node --import`) into a program under test: at exit, writes the process's peak resident size
// in bytes to the file named by NUVEC_MAX_RSS_FILE, so a test can bound a real program's memory.
import { writeFileSync } from "node:fs";

const out = process.env.NUVEC_MAX_RSS_FILE;
if (out !== undefined) {
  process.on("exit", () => writeFileSync(out, String(process.resourceUsage().maxRSS * 1024)));
}
