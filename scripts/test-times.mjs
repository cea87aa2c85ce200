#!/usr/bin/env node
// Where `npm test` spent its time, as Markdown tables (docs/TESTING.md keeps one): every turbo task of the
// last run (from its summary, .turbo/runs/*.json, written by `npm test`'s --summarize) with its wall-clock time
// and whether it came from the cache, then the test files that took longest (vitest's JSON reports,
// <package>/.vitest-results/results.json).
// Usage: node scripts/test-times.mjs [--files N]   (N slowest test files; 25 by default)
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const filesIndex = process.argv.indexOf("--files");
const fileCount = filesIndex >= 0 ? Number(process.argv[filesIndex + 1]) : 25;

const seconds = (milliseconds) => `${(milliseconds / 1000).toFixed(1)} s`;

/** The newest turbo run summary, or undefined. */
function lastRun() {
  const folder = join(root, ".turbo", "runs");
  if (!existsSync(folder)) return undefined;
  const newest = readdirSync(folder)
    .filter((file) => file.endsWith(".json"))
    .map((file) => join(folder, file))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  return newest ? JSON.parse(readFileSync(newest, "utf8")) : undefined;
}

function taskTable(run) {
  const tasks = run.tasks
    .filter((task) => task.execution && task.command !== "<NONEXISTENT>")
    .map((task) => ({
      id: task.taskId,
      took: task.execution.endTime - task.execution.startTime,
      cache: task.cache?.status === "HIT" ? "hit" : "ran",
    }))
    .sort((a, b) => b.took - a.took);
  const start = Math.min(
    ...run.tasks.filter((task) => task.execution).map((task) => task.execution.startTime),
  );
  const end = Math.max(...run.tasks.filter((task) => task.execution).map((task) => task.execution.endTime));
  const lines = [
    `turbo run, ${seconds(end - start)} wall clock, ${tasks.length} tasks:`,
    "",
    "| task | time | cache |",
    "| ---- | ---: | ----- |",
    ...tasks.map((task) => `| ${task.id} | ${seconds(task.took)} | ${task.cache} |`),
  ];
  return lines.join("\n");
}

function fileTable() {
  const rows = [];
  const folders = [join(root, "scripts")];
  for (const group of ["packages", "apps"])
    for (const name of readdirSync(join(root, group))) folders.push(join(root, group, name));
  for (const folder of folders) {
    const report = join(folder, ".vitest-results", "results.json");
    if (!existsSync(report)) continue;
    for (const file of JSON.parse(readFileSync(report, "utf8")).testResults ?? [])
      rows.push({
        file: relative(root, file.name),
        took: file.endTime - file.startTime,
        tests: file.assertionResults?.length ?? 0,
      });
  }
  rows.sort((a, b) => b.took - a.took);
  const total = rows.reduce((sum, row) => sum + row.took, 0);
  return [
    `test files, ${rows.length} in all, ${seconds(total)} summed over files (they run in parallel); the slowest ${Math.min(fileCount, rows.length)}:`,
    "",
    "| test file | tests | time |",
    "| --------- | ----: | ---: |",
    ...rows.slice(0, fileCount).map((row) => `| ${row.file} | ${row.tests} | ${seconds(row.took)} |`),
  ].join("\n");
}

const run = lastRun();
console.log(run ? taskTable(run) : "no turbo run summary (.turbo/runs): run npm test first");
console.log(`\n${fileTable()}`);
