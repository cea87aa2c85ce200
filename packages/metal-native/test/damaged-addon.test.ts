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
import { addonDamages, type ChildOutcome, reportOf, runInChild } from "../../native-core/test/child.js";
import { ADDON_FILE_NAME, abiAddonFileName, PREBUILT_PACKAGES, platformKey } from "../src/platforms.js";

const packageRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const built = join(packageRoot, "native", "build", "Release", ADDON_FILE_NAME);
const stats = dirname(
  fileURLToPath(import.meta.resolve("@nuvec/stats/package.json", `file://${packageRoot}/package.json`)),
);
const prebuiltName = PREBUILT_PACKAGES[platformKey()] as string;
const runs = process.platform === "linux" && existsSync(built) && existsSync(join(packageRoot, "dist"));

const scratch = mkdtempSync(join(tmpdir(), "nuvec-damaged-addon-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const addon = runs ? readFileSync(built) : Buffer.alloc(0);
const damages = addonDamages(addon);

let serial = 0;
/**
 * A copy of this package (manifest and dist) in `scratch`, with @nuvec/stats beside it, and the addon file
 * where the loader looks: the source build's place, or (`prebuilt`) the platform package installed beside it.
 */
function installedCopy(where: "source" | "prebuilt" | "none" = "none"): { root: string; file: string } {
  const root = join(scratch, `copy-${serial++}`, "node_modules", "@nuvec", "metal-native");
  mkdirSync(root, { recursive: true });
  cpSync(join(packageRoot, "package.json"), join(root, "package.json"));
  cpSync(join(packageRoot, "dist"), join(root, "dist"), { recursive: true });
  symlinkSync(stats, join(root, "..", "stats"));
  let folder = join(root, "native", "build", "Release");
  if (where === "prebuilt") {
    folder = join(root, "..", prebuiltName.split("/")[1] as string);
    mkdirSync(folder);
    writeFileSync(join(folder, "package.json"), JSON.stringify({ name: prebuiltName, version: "0.0.0" }));
  } else if (where === "source") mkdirSync(folder, { recursive: true });
  return { root, file: join(folder, ADDON_FILE_NAME) };
}

interface Loaded {
  error?: { name: string; code: string; reason: string; path?: string; message: string };
  loaded?: boolean;
}

/** Loads the copy at `root` through `loadNativeBackend()` in a child process. */
function loadInChild(root: string): ChildOutcome & { report: Loaded } {
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
  return runInChild(script, { env, timeout: 60_000 }) as ChildOutcome & { report: Loaded };
}

/** The error of loading the copy at `root`, after checking that the child lived on. */
const loadError = (root: string) => (reportOf(loadInChild(root)) as Loaded).error;

describe.runIf(runs)("a damaged addon: a typed error in a process that lives on", () => {
  it.each(damages)("the source build (native/build/Release) %s", (_label, damage) => {
    const { root, file } = installedCopy("source");
    damage(file);
    const error = loadError(root);
    expect(error).toMatchObject({
      name: "NativeUnavailableError",
      code: "ERR_NUVEC_NATIVE_UNAVAILABLE",
      reason: "damaged",
      path: file,
    });
    expect(error?.message).toContain(`${file} is damaged: it `);
    expect(error?.message).toContain("To build it from source, run npx @nuvec/metal-native build");
  });

  it.runIf(prebuiltName !== undefined).each(damages)(
    "the installed prebuilt package's addon %s: damaged, with how to reinstall it",
    (_label, damage) => {
      const { root, file } = installedCopy("prebuilt");
      damage(file);
      const error = loadError(root);
      expect(error).toMatchObject({ reason: "damaged", path: file });
      expect(error?.message).toContain(`${file} is damaged: it `);
      expect(error?.message).toContain(`Reinstall it: npm install ${prebuiltName}@`);
    },
  );

  it.runIf(prebuiltName !== undefined)(
    "installed but its addon file missing is damaged; not installed at all is not-installed",
    () => {
      const missing = installedCopy("prebuilt");
      const damaged = loadInChild(missing.root).report.error;
      expect(damaged).toMatchObject({ reason: "damaged", path: missing.file });
      expect(damaged?.message).toContain(`${prebuiltName} is installed but its addon`);
      expect(damaged?.message).toContain("Reinstall it");

      const absent = loadInChild(installedCopy().root).report.error;
      expect(absent).toMatchObject({ reason: "not-installed" });
      expect(absent?.message).toContain("is not installed");
    },
  );

  it.runIf(prebuiltName !== undefined).each<[string, (folder: string) => void, string]>([
    [
      "a package.json that is not JSON",
      (folder) => writeFileSync(join(folder, "package.json"), "{ not json"),
      "Error parsing",
    ],
    [
      "exports that hide its package.json",
      (folder) =>
        writeFileSync(
          join(folder, "package.json"),
          JSON.stringify({ name: prebuiltName, version: "0.0.0", exports: { ".": "./index.js" } }),
        ),
      'is not defined by "exports"',
    ],
    ["no package.json", (folder) => rmSync(join(folder, "package.json")), "Cannot find module"],
  ])(
    "the prebuilt package installed with %s, its whole addon beside it: damaged, not not-installed",
    (_label, spoil, why) => {
      const { root, file } = installedCopy("prebuilt");
      cpSync(built, file);
      spoil(dirname(file));
      const error = loadError(root);
      expect(error).toMatchObject({ reason: "damaged", path: join(dirname(file), "package.json") });
      expect(error?.message).toContain(
        `${prebuiltName} is installed (${dirname(file)}) but its package.json does not lead to its addon (`,
      );
      expect(error?.message).toContain(why);
      expect(error?.message).toContain(`Reinstall it: npm install ${prebuiltName}@`);
    },
  );

  it.runIf(prebuiltName !== undefined).each<[string, (manifest: string) => void, string]>([
    ["a FIFO", (manifest) => expect(spawnSync("mkfifo", [manifest]).status).toBe(0), "a FIFO"],
    ["a link to /dev/zero", (manifest) => symlinkSync("/dev/zero", manifest), "a character device"],
  ])(
    "the prebuilt package's package.json %s: damaged at once, never read (a hang fails)",
    (_label, place, kind) => {
      const { root, file } = installedCopy("prebuilt");
      cpSync(built, file);
      const manifest = join(dirname(file), "package.json");
      rmSync(manifest);
      place(manifest);
      const error = loadError(root);
      expect(error).toMatchObject({ reason: "damaged", path: manifest });
      expect(error?.message).toContain(
        `${prebuiltName} is installed (${dirname(file)}) but its package.json is ${kind}, not a file. Reinstall it`,
      );
    },
  );

  it("the source build's place holding a link to a whole addon without .node: damaged, never run as JavaScript", () => {
    const { root, file } = installedCopy("source");
    const real = join(dirname(file), "renamed");
    cpSync(built, real);
    symlinkSync(real, file);
    const error = loadError(root);
    expect(error).toMatchObject({ reason: "damaged", path: file });
    expect(error?.message).toContain(
      `${file} is damaged: its name does not end in .node (a link to ${real}): Node.js loads only a .node file`,
    );
  });

  it.runIf(prebuiltName !== undefined)(
    "the prebuilt package's build for this Node.js ABI is the one loaded: damaged, it is refused, not passed over",
    () => {
      const { root, file } = installedCopy("prebuilt");
      cpSync(built, file);
      const forThisNode = join(dirname(file), abiAddonFileName());
      writeFileSync(forThisNode, addon.subarray(0, Math.floor(addon.length / 2)));
      const error = loadError(root);
      expect(error).toMatchObject({ reason: "damaged", path: forThisNode });
      expect(error?.message).toContain(`${forThisNode} is damaged: it is truncated`);
      expect(error?.message).toContain(`Reinstall it: npm install ${prebuiltName}@`);
      // Whole, it loads (with the Node-API build beside it damaged: that one is not read).
      cpSync(built, forThisNode);
      writeFileSync(file, "");
      expect(loadInChild(root).report.loaded).toBe(true);
    },
  );

  /** A copy with the platform package holding `bytes` and, unless `null`, `checksum` as its `.sha256`. */
  function withPrebuilt(bytes: Buffer, checksum: string | null): { root: string; file: string } {
    const copy = installedCopy("prebuilt");
    writeFileSync(copy.file, bytes);
    if (checksum !== null) writeFileSync(`${copy.file}.sha256`, checksum);
    return copy;
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
      const error = loadError(root);
      expect(error).toMatchObject({ reason: "damaged", path: file });
      expect(error?.message).toMatch(
        /is damaged: its SHA-256 is [0-9a-f]{64}, not [0-9a-f]{64} as it was packed/,
      );
      expect(error?.message).toContain("Reinstall it");
    },
  );

  it.runIf(prebuiltName !== undefined)(
    "the prebuilt package's whole addon with its SHA-256 loads; a checksum file that holds none is damaged",
    () => {
      expect(loadInChild(withPrebuilt(addon, packedSum).root).report.loaded).toBe(true);
      const garbled = withPrebuilt(addon, "not a checksum\n");
      expect(loadInChild(garbled.root).report.error?.message).toContain(".sha256 holds no SHA-256");
    },
  );

  it("a whole addon in the copy's source build loads (the copies are sound apart from the damage)", () => {
    const { root, file } = installedCopy("source");
    cpSync(built, file);
    expect((reportOf(loadInChild(root)) as Loaded).loaded).toBe(true);
  });
});
