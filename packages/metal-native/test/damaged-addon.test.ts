// A damaged addon never takes the process down. Copies of this package's built dist are laid out as an
// installed package, with the real addon cut at several offsets (inside the ELF header, inside the program
// headers, inside a segment, one byte short) or replaced by something that is no addon, at the source build's
// place and in the platform's prebuilt package; a child process loads each through the public loader. The
// child must exit normally with NativeUnavailableError (`damaged`, naming the file): the dynamic loader
// would die of SIGBUS on a truncated file.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ADDON_FILE_NAME, PREBUILT_PACKAGES, platformKey } from "../src/platforms.js";

const packageRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const built = join(packageRoot, "native", "build", "Release", ADDON_FILE_NAME);
const stats = dirname(
  fileURLToPath(import.meta.resolve("@nuvec/stats/package.json", `file://${packageRoot}/package.json`)),
);
const prebuiltName = PREBUILT_PACKAGES[platformKey()];
const runs = process.platform === "linux" && existsSync(built) && existsSync(join(packageRoot, "dist"));

const scratch = mkdtempSync(join(tmpdir(), "nuvec-damaged-addon-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** How to put a damaged addon at `file`. */
type Damage = (file: string) => void;

const addon = runs ? readFileSync(built) : Buffer.alloc(0);
const cut =
  (length: number): Damage =>
  (file) =>
    writeFileSync(file, addon.subarray(0, length));
/** The end of the first PT_LOAD segment of the real addon, from its first program header (64-bit ELF). */
const firstSegmentEnd = runs ? Number(addon.readBigUInt64LE(64 + 8) + addon.readBigUInt64LE(64 + 32)) : 0;

const damages: [string, Damage][] = [
  ["cut inside the ELF header (40 bytes)", cut(40)],
  ["cut inside the program headers (100 bytes)", cut(100)],
  ["cut inside the first segment", cut(Math.floor(firstSegmentEnd / 2))],
  ["cut inside a later segment (three quarters)", cut(Math.floor((addon.length * 3) / 4))],
  ["one byte short", cut(addon.length - 1)],
  ["not ELF at all", (file) => writeFileSync(file, "module.exports = {};\n")],
  ["empty", (file) => writeFileSync(file, "")],
  ["a directory", (file) => mkdirSync(file)],
  ["a FIFO", (file) => expect(spawnSync("mkfifo", [file]).status).toBe(0)],
  ["a link to /dev/zero", (file) => symlinkSync("/dev/zero", file)],
];

let serial = 0;
/** A copy of this package (manifest and dist) in `scratch`, with @nuvec/stats beside it. */
function installedCopy(): string {
  const root = join(scratch, `copy-${serial++}`, "node_modules", "@nuvec", "metal-native");
  mkdirSync(root, { recursive: true });
  cpSync(join(packageRoot, "package.json"), join(root, "package.json"));
  cpSync(join(packageRoot, "dist"), join(root, "dist"), { recursive: true });
  symlinkSync(stats, join(root, "..", "stats"));
  return root;
}

interface Outcome {
  status: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  error?: { name: string; code: string; reason: string; path?: string; message: string };
  loaded?: boolean;
}

/** Loads the copy at `root` through `loadNativeBackend()` in a child process. */
function loadInChild(root: string): Outcome {
  const script = `
    const { loadNativeBackend } = await import(${JSON.stringify(join(root, "dist", "index.js"))});
    try {
      loadNativeBackend();
      console.log(JSON.stringify({ loaded: true }));
    } catch (e) {
      console.log(JSON.stringify({ error: { name: e.name, code: e.code, reason: e.reason, path: e.path, message: e.message } }));
    }`;
  // Without NODE_PATH (a package manager's run may set it to the workspace's store), the copy resolves
  // packages only from its own node_modules, as an installed package does.
  const { NODE_PATH: _, ...env } = process.env;
  const result = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    encoding: "utf8",
    timeout: 60_000,
    env,
  });
  const last = result.stdout.trim().split("\n").at(-1) ?? "{}";
  return { status: result.status, signal: result.signal, stderr: result.stderr, ...JSON.parse(last || "{}") };
}

describe.runIf(runs)("a damaged addon: a typed error in a process that lives on", () => {
  it.each(damages)("the source build (native/build/Release) %s", (_label, damage) => {
    const root = installedCopy();
    const file = join(root, "native", "build", "Release", ADDON_FILE_NAME);
    mkdirSync(dirname(file), { recursive: true });
    damage(file);
    const outcome = loadInChild(root);
    expect(outcome.signal, outcome.stderr).toBeNull();
    expect(outcome.status, outcome.stderr).toBe(0);
    expect(outcome.error).toMatchObject({
      name: "NativeUnavailableError",
      code: "ERR_NUVEC_NATIVE_UNAVAILABLE",
      reason: "damaged",
      path: file,
    });
    expect(outcome.error?.message).toContain(`${file} is damaged: it `);
    expect(outcome.error?.message).toContain("To build it from source, run npx @nuvec/metal-native build");
  });

  it.runIf(prebuiltName !== undefined).each(damages)(
    "the installed prebuilt package's addon %s: damaged, with how to reinstall it",
    (_label, damage) => {
      const root = installedCopy();
      const prebuilt = join(root, "..", (prebuiltName as string).split("/")[1] as string);
      mkdirSync(prebuilt);
      writeFileSync(join(prebuilt, "package.json"), JSON.stringify({ name: prebuiltName, version: "0.0.0" }));
      const file = join(prebuilt, ADDON_FILE_NAME);
      damage(file);
      const outcome = loadInChild(root);
      expect(outcome.signal, outcome.stderr).toBeNull();
      expect(outcome.status, outcome.stderr).toBe(0);
      expect(outcome.error).toMatchObject({ reason: "damaged", path: file });
      expect(outcome.error?.message).toContain(`${file} is damaged: it `);
      expect(outcome.error?.message).toContain(`Reinstall it: npm install ${prebuiltName}@`);
    },
  );

  it.runIf(prebuiltName !== undefined)(
    "installed but its addon file missing is damaged; not installed at all is not-installed",
    () => {
      const missing = installedCopy();
      const prebuilt = join(missing, "..", (prebuiltName as string).split("/")[1] as string);
      mkdirSync(prebuilt);
      writeFileSync(join(prebuilt, "package.json"), JSON.stringify({ name: prebuiltName, version: "0.0.0" }));
      const damaged = loadInChild(missing);
      expect(damaged.error).toMatchObject({ reason: "damaged", path: join(prebuilt, ADDON_FILE_NAME) });
      expect(damaged.error?.message).toContain(`${prebuiltName} is installed but its addon`);
      expect(damaged.error?.message).toContain("Reinstall it");

      const absent = loadInChild(installedCopy());
      expect(absent.error).toMatchObject({ reason: "not-installed" });
      expect(absent.error?.message).toContain("is not installed");
    },
  );

  /** A copy with the platform package holding `bytes` and, unless `null`, `checksum` as its `.sha256`. */
  function withPrebuilt(bytes: Buffer, checksum: string | null): { root: string; file: string } {
    const root = installedCopy();
    const prebuilt = join(root, "..", (prebuiltName as string).split("/")[1] as string);
    mkdirSync(prebuilt);
    writeFileSync(join(prebuilt, "package.json"), JSON.stringify({ name: prebuiltName, version: "0.0.0" }));
    const file = join(prebuilt, ADDON_FILE_NAME);
    writeFileSync(file, bytes);
    if (checksum !== null) writeFileSync(`${file}.sha256`, checksum);
    return { root, file };
  }
  const packedSum = `${createHash("sha256").update(addon).digest("hex")}  ${ADDON_FILE_NAME}\n`;

  it.runIf(prebuiltName !== undefined).each([
    ["in the ELF header's flags", 48],
    ["in the program headers", 64 + 56 + 8],
    ["in the dynamic symbols", 1024],
    ["in the code", Math.floor(addon.length / 3)],
    ["in the last byte", addon.length - 1],
  ])(
    "the prebuilt package's addon with one byte changed %s: damaged by its packed SHA-256, never loaded",
    (_label, offset) => {
      const changed = Buffer.from(addon);
      changed[offset] = (changed[offset] as number) ^ 0x5a;
      const { root, file } = withPrebuilt(changed, packedSum);
      const outcome = loadInChild(root);
      expect(outcome.signal, outcome.stderr).toBeNull();
      expect(outcome.status, outcome.stderr).toBe(0);
      expect(outcome.error).toMatchObject({ reason: "damaged", path: file });
      expect(outcome.error?.message).toMatch(
        /is damaged: its SHA-256 is [0-9a-f]{64}, not [0-9a-f]{64} as it was packed/,
      );
      expect(outcome.error?.message).toContain("Reinstall it");
    },
  );

  it.runIf(prebuiltName !== undefined)(
    "the prebuilt package's whole addon with its SHA-256 loads; a checksum file that holds none is damaged",
    () => {
      const whole = withPrebuilt(addon, packedSum);
      expect(loadInChild(whole.root).loaded).toBe(true);
      const garbled = withPrebuilt(addon, "not a checksum\n");
      expect(loadInChild(garbled.root).error?.message).toContain(".sha256 holds no SHA-256");
    },
  );

  it("a whole addon in the copy's source build loads (the copies are sound apart from the damage)", () => {
    const root = installedCopy();
    const file = join(root, "native", "build", "Release", ADDON_FILE_NAME);
    mkdirSync(dirname(file), { recursive: true });
    cpSync(built, file);
    const outcome = loadInChild(root);
    expect(outcome.status, outcome.stderr).toBe(0);
    expect(outcome.loaded).toBe(true);
  });
});
