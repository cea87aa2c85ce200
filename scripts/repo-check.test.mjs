// The repository check (scripts/repo-check.mjs): the product speaks only of the product.
import { describe, expect, it } from "vitest";
import { checkRepository, findingsIn, trackedFiles } from "./repo-check.mjs";

const rules = (text) => findingsIn(text).map((finding) => finding.rule);

describe("repo-check", () => {
  it("refuses issue numbers and bare issue references in prose", () => {
    expect(rules("as issue 14 asked")).toEqual(["issue number"]);
    expect(rules("Issue #3 and issues 11 and 12")).toEqual([
      "issue number",
      "issue number",
      "issue reference",
    ]);
    expect(rules("fixed in (#23).")).toEqual(["issue reference"]);
    expect(rules("#7 was the cause")).toEqual(["issue reference"]);
  });

  it("allows upstream citations, colours and anchors", () => {
    expect(rules("users cap the cache by hand (ml-explore/mlx#3350, waybarrios/vllm-mlx#793)")).toEqual([]);
    expect(rules("https://github.com/ml-explore/mlx/issues/3350")).toEqual([]);
    expect(rules('stroke="#e5e7eb" color: #111827; a &#60;b&#62;')).toEqual([]);
    expect(rules("see [the table](#errors) and README.md#install")).toEqual([]);
    expect(rules("an issue with the driver; 14 issues")).toEqual([]);
  });

  it("refuses words about the making of the product", () => {
    expect(rules("shared with five other sessions")).toEqual(["work-log word"]);
    expect(rules("the coordinator merges it")).toEqual(["work-log word"]);
    expect(rules("in another worktree")).toEqual(["work-log word"]);
    expect(rules("a test helper; rounds of making and releasing")).toEqual([]);
  });

  it("refuses absolute paths of a machine", () => {
    expect(rules("with nuvec's rules of /work/shared/DESIGN.md")).toEqual(["machine path"]);
    expect(rules("cloned into /tmp/fresh-clone.x/repo")).toEqual(["machine path"]);
    expect(rules("HOME=/root/")).toEqual(["machine path"]);
    expect(rules("see docs/work/plan.md and ./root/x, /tmp/nuvec-gpu-out, a 0700 home (/root)")).toEqual([]);
  });

  it("reads the tracked files, fixtures and the lockfile left out", () => {
    const files = trackedFiles();
    expect(files).toContain("README.md");
    expect(files).toContain("scripts/docs-test.mjs");
    expect(files.some((path) => path.startsWith("fixtures/") || path === "pnpm-lock.yaml")).toBe(false);
    expect(files).not.toContain("scripts/repo-check.test.mjs"); // names what it refuses, on purpose
  });

  it("finds nothing in the repository", () => {
    const findings = checkRepository().map(
      ({ path, line, rule, text }) => `${path}:${line}: ${rule}: ${text}`,
    );
    expect(findings).toEqual([]);
  });
});
