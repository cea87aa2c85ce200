#!/usr/bin/env node
// The product speaks only of the product: no tracked file refers to the work that made it. Fails on
//   - issue numbers in prose ("issue 14", "issues 11 and 12", "(#23)"); a reference to a public upstream
//     issue (ml-explore/mlx#3350, a github.com/.../issues/N address) is the product citing a source: allowed;
//   - words about the making of it: session, coordinator, worktree, helper branches;
//   - absolute paths of a particular machine (/work/…, /tmp/fresh-clone…, /root/…); naming a folder such
//     as "a 0700 home, /root" in prose is not a path into one.
// The fixtures (recorded data) and the lockfile are not prose and are skipped. Run by `npm test` through
// scripts/repo-check.test.mjs; `node scripts/repo-check.mjs` prints every finding.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository's root. */
export const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Tracked paths that are data, not prose, and the check itself (it names what it refuses). */
const SKIPPED = [
  /^fixtures\//,
  /^pnpm-lock\.yaml$/,
  /\.(gz|png|jpg|node|safetensors)$/,
  /^scripts\/repo-check(\.test)?\.mjs$/,
];

/** What is refused, each with what to say about it. */
export const RULES = [
  {
    name: "issue number",
    // "issue 14", "Issue #3", "issues 11 and 12" (the first number is enough to find it).
    pattern: /\bissues?\s+#?\d+/gi,
  },
  {
    name: "issue reference",
    // "#23" standing alone in prose, not "owner/repo#23" (an upstream citation) and not a colour ("#111827").
    pattern: /(?<![\w/.&-])#\d{1,5}(?![\w;])/g,
  },
  {
    name: "work-log word",
    pattern: /\b(?:sessions?|coordinator|worktrees?|helper (?:branch|session)s?)\b/gi,
  },
  { name: "machine path", pattern: /(?<![\w.])\/(?:work\/|root\/|tmp\/fresh-clone)/g },
];

/** The findings in one text: `{ line, rule, text }` for each match (1-based lines). */
export function findingsIn(text) {
  const findings = [];
  const lines = text.split("\n");
  lines.forEach((content, index) => {
    for (const rule of RULES)
      for (const match of content.matchAll(rule.pattern))
        findings.push({ line: index + 1, rule: rule.name, text: match[0] });
  });
  return findings;
}

/** Every tracked text file the check reads, relative to the root. */
export function trackedFiles(directory = root) {
  return execFileSync("git", ["ls-files", "-z"], { cwd: directory, encoding: "utf8", maxBuffer: 64 << 20 })
    .split("\0")
    .filter((path) => path !== "" && !SKIPPED.some((pattern) => pattern.test(path)));
}

/** The findings in every tracked file: `{ path, line, rule, text }`. */
export function checkRepository(directory = root) {
  const findings = [];
  for (const path of trackedFiles(directory)) {
    let text;
    try {
      text = readFileSync(join(directory, path), "utf8");
    } catch {
      continue; // deleted in the work tree, not yet committed
    }
    if (text.includes("\0")) continue; // binary
    for (const finding of findingsIn(text)) findings.push({ path, ...finding });
  }
  return findings;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const findings = checkRepository();
  for (const { path, line, rule, text } of findings) console.log(`${path}:${line}: ${rule}: ${text}`);
  console.log(`repo-check: ${findings.length} finding${findings.length === 1 ? "" : "s"}`);
  process.exitCode = findings.length === 0 ? 0 : 1;
}
