#!/usr/bin/env node
// The README's two commands, on a machine with only Node.js 20 and npm:
//   npm run demo   installs the workspace if needed (pinned pnpm through npx), builds, runs the demo;
//   npm test       the same install and build, then typecheck, lint, tests and package checks, then the docs
//                  test (every README's TypeScript blocks against the packed packages, scripts/docs-test.mjs).
// And the release jobs CI runs after them (.ci/run): `npm run test:prebuilds`, `npm run test:registry`,
// `npm run test:long-traces`.
// pnpm comes from scripts/pnpm.mjs (the pinned version, through npx when it is not on PATH).
// Everything is idempotent: a second run installs nothing and turbo replays what did not change.
import { spawn, spawnSync } from "node:child_process";
import { closeSync, existsSync, openSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { pnpmVersion, runPnpm } from "./pnpm.mjs";
import { temporaryFolder } from "./temporary.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const [task = "test", ...rest] = process.argv.slice(2);

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit", ...options });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

function pnpmRun(args) {
  const result = runPnpm(args);
  if (result.error) throw result.error;
  return result.status ?? 1;
}

function ensureInstalled() {
  const marker = join(root, "node_modules", ".modules.yaml");
  const lock = join(root, "pnpm-lock.yaml");
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  console.log(`nuvec: installing the workspace with pnpm ${pnpmVersion} …`);
  if (pnpmRun(["install", "--frozen-lockfile"]) !== 0) process.exit(1);
}

// The docs test packs every package and installs the tarballs into a fresh project: on a cold npm cache that
// downloads their registry dependencies, hence a generous bound (it takes about 30 s warm).
const DOCS_TEST_TIMEOUT_MS = 15 * 60_000;
function docsTest() {
  const result = spawnSync(process.execPath, [join(root, "scripts/docs-test.mjs")], {
    cwd: root,
    stdio: "inherit",
    timeout: DOCS_TEST_TIMEOUT_MS,
    killSignal: "SIGKILL",
  });
  if (result.error) console.error(`docs test: ${result.error.message}`);
  return result.status === 0;
}

// The tests of these scripts themselves (scripts/*.test.mjs): a few milliseconds, so not worth a turbo task.
// It runs beside the docs test (each waits on its own child processes much of the time): its output goes to a
// file, printed once it is done, so the two never interleave. Resolves with its exit status.
function scriptsTest() {
  const vitest = join(root, "node_modules", "vitest", "vitest.mjs");
  const temporary = temporaryFolder("nuvec-scripts-test-");
  const folder = temporary.path;
  const log = join(folder, "output.log");
  const output = openSync(log, "w");
  const child = spawn(
    process.execPath,
    [vitest, "run", "--config", join(root, "scripts/vitest.config.mjs")],
    {
      cwd: root,
      stdio: ["ignore", output, output],
    },
  );
  closeSync(output);
  return new Promise((resolve) => {
    child.on("error", () => resolve(1));
    child.on("close", (status) => {
      process.stdout.write(readFileSync(log, "utf8"));
      temporary.remove();
      resolve(status ?? 1);
    });
  });
}

// Sums the vitest JSON reports of every package and of the scripts, and the docs test, into one plain
// closing line.
function summarize(docsPassed) {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  // A file whose setup or teardown failed has no failed test but a failed suite: the closing line must not
  // hide it.
  let brokenFiles = 0;
  // What failed, named, so the end of a long log says it (CI shows its tail).
  const failures = [];
  const folders = [join(root, "scripts")];
  for (const group of ["packages", "apps"]) {
    for (const name of readdirSync(join(root, group))) folders.push(join(root, group, name));
  }
  for (const folder of folders) {
    const report = join(folder, ".vitest-results", "results.json");
    if (!existsSync(report)) continue;
    const results = JSON.parse(readFileSync(report, "utf8"));
    passed += results.numPassedTests;
    failed += results.numFailedTests;
    skipped += results.numPendingTests + results.numTodoTests;
    for (const file of results.testResults ?? []) {
      const name = relative(root, file.name ?? "");
      const failedTests = (file.assertionResults ?? []).filter((test) => test.status === "failed");
      for (const test of failedTests) {
        const reason = String(test.failureMessages?.[0] ?? "")
          .split("\n")[0]
          .slice(0, 160);
        failures.push(`${name} > ${test.fullName ?? test.title}${reason === "" ? "" : `: ${reason}`}`);
      }
      if (file.status === "failed" && failedTests.length === 0) {
        brokenFiles += 1;
        failures.push(
          `${name}: ${String(file.message ?? "failed outside its tests")
            .split("\n")[0]
            .slice(0, 160)}`,
        );
      }
    }
  }
  // The docs test counts as one test (its blocks are listed in its own output above).
  if (docsPassed) passed += 1;
  else {
    failed += 1;
    failures.push("the docs test (scripts/docs-test.mjs; its output is above)");
  }
  const broken =
    brokenFiles > 0
      ? `, ${brokenFiles} test files failed outside their tests (a hook or the file itself)`
      : "";
  console.log(
    `\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped${broken} (the docs test included)`,
  );
  for (const failure of failures) console.log(`  failed: ${failure}`);
  return failed + brokenFiles;
}

/**
 * Names the tasks of the newest turbo run summary (`--summarize`) that failed or never ran, so the end of the
 * log says which of build, typecheck, lint, tests and package checks broke.
 */
function failedTurboTasks() {
  const runs = join(root, ".turbo", "runs");
  if (!existsSync(runs)) return;
  const newest = readdirSync(runs)
    .filter((name) => name.endsWith(".json"))
    .map((name) => ({ name, time: statSync(join(runs, name)).mtimeMs }))
    .sort((a, b) => b.time - a.time)[0];
  if (newest === undefined) return;
  const summary = JSON.parse(readFileSync(join(runs, newest.name), "utf8"));
  const failed = (summary.tasks ?? [])
    .filter((task) => task.execution?.exitCode !== 0)
    .map(
      (task) =>
        `${task.taskId} (${task.execution === undefined ? "not run" : `exit ${task.execution.exitCode}`})`,
    );
  if (failed.length > 0) console.log(`\nturbo tasks that failed or did not run: ${failed.join(", ")}`);
}

/** Runs one step, then prints how long it took (the log says where a slow run spent its time). */
function timed(name, step) {
  const started = performance.now();
  const result = step();
  console.log(`nuvec: ${name} took ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return result;
}

const tasks = {
  demo() {
    const built = pnpmRun([
      "turbo",
      "run",
      "build",
      "--filter=@nuvec/examples...",
      "--output-logs=errors-only",
    ]);
    if (built !== 0) return 1;
    return run(process.execPath, [join(root, "apps/examples/dist/demo.js"), ...rest]);
  },
  async test() {
    const status = timed("build, typecheck, lint, tests and package checks", () =>
      pnpmRun([
        "turbo",
        "run",
        "build",
        "typecheck",
        "lint",
        "lint:repo",
        "test",
        "check:packages",
        "--continue=dependencies-successful",
        "--summarize",
        ...rest,
      ]),
    );
    if (status !== 0) failedTurboTasks();
    const scripts = scriptsTest();
    const docsPassed = timed("the docs test", docsTest);
    const scriptsStatus = await scripts;
    const failedTests = summarize(docsPassed);
    return status !== 0 || scriptsStatus !== 0 || failedTests > 0 ? 1 : 0;
  },
  // Every platform's prebuilt addon cross-compiled with Zig as it is packed, checked (glibc baseline, exported
  // symbols) and run through the contract suite (arm64 under qemu where it is installed): a release job.
  "test:prebuilds"() {
    if (pnpmRun(["turbo", "run", "build", "--filter=@nuvec/metal-native", "--output-logs=errors-only"]) !== 0)
      return 1;
    const folder = join(root, "packages", "metal-native");
    const vitest = join(root, "node_modules", "vitest", "vitest.mjs");
    return run(process.execPath, [vitest, "run", "--config", "vitest.prebuilds.config.ts", ...rest], {
      cwd: folder,
    });
  },
  // The replays of 36-million-event traces, each within 150 MiB resident (a minute or more each; the main
  // suite skips them): the allocator's replayTraceStream and the replay program.
  "test:long-traces"() {
    if (pnpmRun(["turbo", "run", "build", "--filter=@nuvec/examples...", "--output-logs=errors-only"]) !== 0)
      return 1;
    const vitest = join(root, "node_modules", "vitest", "vitest.mjs");
    const env = { ...process.env, NUVEC_LONG_TRACES: "1" };
    const allocator = run(
      process.execPath,
      [vitest, "run", "src/node/trace-file.hostile.test.ts", "-t", "36-million"],
      {
        cwd: join(root, "packages", "allocator"),
        env,
      },
    );
    const program = run(process.execPath, [vitest, "run", "test/long-trace.test.ts"], {
      cwd: join(root, "apps", "examples"),
      env,
    });
    return allocator !== 0 || program !== 0 ? 1 : 0;
  },
  // A local registry, every package published to it by `pnpm release`, @nuvec/device installed from it by
  // each package manager users have (scripts/registry-test.mjs).
  "test:registry"() {
    return run(process.execPath, [join(root, "scripts", "registry-test.mjs"), ...rest]);
  },
};

if (!Object.hasOwn(tasks, task)) {
  console.error(`unknown task ${task}: use ${Object.keys(tasks).join(", ")}`);
  process.exit(2);
}
ensureInstalled();
process.exit(await tasks[task]());
