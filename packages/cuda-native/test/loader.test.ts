// What runs without a GPU (CI): the loader's argument checks, made before the driver is touched, its
// refusal with NativeUnavailableError where there is no driver or no device, where the addon is not built or
// does not load, and the build command it names.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { NativeUnavailableError } from "@nuvec/metal-native";
import { ArgumentError, NuvecError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { addonDamages, reportOf, runInChild } from "../../native-core/test/child.js";
import { thrown } from "../../native-core/test/support.js";
import { loadCudaBackend } from "../src/index.js";
import { findCudaAddon } from "../src/loader.js";
import { cudaBackend, cudaUnavailableReason } from "./support.js";

const packageRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
// False in the GPU run's bundle (gpu/dist/tests.mjs, run by gpu/run.sh), which has no package around it (no
// package.json, no native/build, no node_modules: the addon comes through NUVEC_CUDA_NATIVE_ADDON there), so
// the tests of the package's own layout cannot run there.
const inPackage = existsSync(join(packageRoot, "package.json"));

describe("loadCudaBackend", () => {
  it.each([
    ["device -1", { device: -1 }, "device"],
    ["device 1.5", { device: 1.5 }, "device"],
    ["device NaN", { device: Number.NaN }, "device"],
    ['device "0"', { device: "0" }, "device"],
    ["device 0n", { device: 0n }, "device"],
    ["device null", { device: null }, "device"],
    ["options that are null", null, "options"],
    ["options that are a number", 3, "options"],
    ["a misspelt option", { devcie: 1 }, "devcie"],
  ])("refuses %s with ArgumentError before touching the driver", (_label, options, argument) => {
    const error = thrown(() => loadCudaBackend(options as never));
    expect(error).toBeInstanceOf(ArgumentError);
    expect(error).toMatchObject({ code: "ERR_NUVEC_INVALID_ARGUMENT", argument });
  });

  it("reads device once: a getter that answers -1 and then 0 is refused, as it first answered", () => {
    let reads = 0;
    const options = {
      get device() {
        reads += 1;
        return reads === 1 ? -1 : 0;
      },
    };
    expect(thrown(() => loadCudaBackend(options))).toMatchObject({ argument: "device" });
    expect(reads).toBe(1);
  });

  it.runIf(cudaBackend === undefined)(
    "without a CUDA driver or device: NativeUnavailableError, with the code, saying why",
    () => {
      const error = thrown(() => loadCudaBackend());
      expect(error).toBeInstanceOf(NativeUnavailableError);
      expect(error).toBeInstanceOf(NuvecError);
      expect((error as NativeUnavailableError).code).toBe("ERR_NUVEC_NATIVE_UNAVAILABLE");
      expect((error as Error).name).toBe("NativeUnavailableError");
      expect((error as Error).message).toMatch(/@nuvec\/cuda-native/);
      expect((error as Error).message).toBe(cudaUnavailableReason);
      // On Linux the workspace's build compiled the addon: what is missing is the driver or the GPU.
      if (process.platform === "linux")
        expect((error as NativeUnavailableError).reason).toBe("backend-unavailable");
      // Asked again, the same answer (the failure is not cached into something else).
      expect((thrown(() => loadCudaBackend({ device: 0 })) as Error).message).toBe((error as Error).message);
    },
  );

  it.runIf(cudaBackend !== undefined)(
    "with a GPU: a device ordinal the machine does not have is NativeUnavailableError; device 0 still loads",
    () => {
      const error = thrown(() => loadCudaBackend({ device: 4096 }));
      expect(error).toBeInstanceOf(NativeUnavailableError);
      expect((error as Error).message).toMatch(/no CUDA device 4096|one device per thread/);
      expect(loadCudaBackend()).toBe(cudaBackend);
      expect(loadCudaBackend({ device: 0 })).toBe(cudaBackend);
    },
  );
});

/** The error `findCudaAddon` gives for these arguments (fails the test if it found an addon). */
function refusal(...args: Parameters<typeof findCudaAddon>): NativeUnavailableError {
  const found = findCudaAddon(...args);
  if (!("error" in found)) throw new Error("expected no addon, found one");
  expect(found.error).toBeInstanceOf(NativeUnavailableError);
  expect(found.error.code).toBe("ERR_NUVEC_NATIVE_UNAVAILABLE");
  return found.error;
}

/** An empty folder standing for an installed copy of the package. */
function emptyPackage(): string {
  return mkdtempSync(join(tmpdir(), "nuvec-cuda-loader-"));
}

describe("finding the addon (no prebuilt one: the source build in native/build/Release)", () => {
  it.runIf(process.platform === "linux" && inPackage)(
    "the workspace's build put it where the loader looks, and it loads",
    () => {
      const found = findCudaAddon(packageRoot, "linux", undefined);
      expect("addon" in found && typeof found.addon.open).toBe("function");
    },
  );

  it("not built: NativeUnavailableError (no-prebuilt) naming the file and the build command of that copy", () => {
    const root = emptyPackage();
    const error = refusal(root, "linux", undefined);
    expect(error.reason).toBe("no-prebuilt");
    expect(error.message).toContain(join(root, "native", "build", "Release", "nuvec_cuda_native.node"));
    expect(error.message).toContain("npx @nuvec/cuda-native build");
    expect(error.message).toContain(`node "${join(root, "scripts", "build-from-source.mjs")}"`);
    expect(error.message).toContain("not the CUDA toolkit");
  });

  it("a built file that is no shared library: NativeUnavailableError (damaged), checked before loading", () => {
    const root = emptyPackage();
    mkdirSync(join(root, "native", "build", "Release"), { recursive: true });
    const file = join(root, "native", "build", "Release", "nuvec_cuda_native.node");
    writeFileSync(file, "not an ELF file");
    const error = refusal(root, "linux", undefined);
    expect(error.reason).toBe("damaged");
    expect(error.path).toBe(file);
    expect(error.message).toContain(
      `${file} is damaged: it is not an ELF shared library (no ELF magic number). Rebuild it: run npx @nuvec/cuda-native build`,
    );
  });

  it("NUVEC_CUDA_NATIVE_ADDON naming a missing file: load-failed; another module: damaged, never run", () => {
    const root = emptyPackage();
    const missing = refusal(root, "linux", join(root, "missing.node"));
    expect(missing.reason).toBe("load-failed");
    expect(missing.message).toContain(
      "missing.node (NUVEC_CUDA_NATIVE_ADDON) does not load (it does not exist: the variable names the " +
        "addon file itself, its .node extension included)",
    );
    const other = join(root, "other.cjs");
    writeFileSync(other, "globalThis.ranOther = true; module.exports = { open: 1 };\n");
    const notTheAddon = refusal(root, "linux", other);
    expect(notTheAddon.reason).toBe("damaged");
    expect(notTheAddon.path).toBe(other);
    expect(notTheAddon.message).toContain(
      `${other} (NUVEC_CUDA_NATIVE_ADDON) is damaged: its name does not end in .node: Node.js loads only a ` +
        ".node file as a native addon and would run this one as JavaScript",
    );
    expect((globalThis as { ranOther?: boolean }).ranOther).toBeUndefined();
  });

  it.each(["darwin", "win32"] as const)(
    "on %s: unsupported-platform, with no build command (there is nothing to build)",
    (platform) => {
      const error = refusal(packageRoot, platform, undefined);
      expect(error.reason).toBe("unsupported-platform");
      expect(error.message).toContain("Linux");
      expect(error.message).not.toContain("npx @nuvec/cuda-native build");
    },
  );
});

/** The real addon, where the workspace's build made it. */
const builtAddon = join(packageRoot, "native", "build", "Release", "nuvec_cuda_native.node");

describe.runIf(process.platform === "linux" && inPackage && existsSync(builtAddon))(
  "a damaged addon: a typed error in a process that lives on (child processes)",
  () => {
    const damages = addonDamages(existsSync(builtAddon) ? readFileSync(builtAddon) : Buffer.alloc(0));
    const dist = join(packageRoot, "dist", "index.js");

    it.each(damages)("NUVEC_CUDA_NATIVE_ADDON naming the addon %s: damaged, exit 0", (_label, damage) => {
      const file = join(emptyPackage(), "nuvec_cuda_native.node");
      damage(file);
      const script = `
        const { loadCudaBackend } = await import(${JSON.stringify(dist)});
        try { loadCudaBackend(); console.log(JSON.stringify({ loaded: true })); }
        catch (e) { console.log(JSON.stringify({ name: e.name, reason: e.reason, path: e.path, message: e.message })); }`;
      const env = { ...process.env, NUVEC_CUDA_NATIVE_ADDON: file };
      const outcome = reportOf(runInChild(script, { env, timeout: 60_000 })) as { message: string };
      expect(outcome).toMatchObject({ name: "NativeUnavailableError", reason: "damaged", path: file });
      expect(outcome.message).toContain(`${file} (NUVEC_CUDA_NATIVE_ADDON) is damaged: it `);
      expect(outcome.message).toContain("Rebuild it: run npx @nuvec/cuda-native build");
    });
  },
);

describe.runIf(process.platform === "linux" && inPackage && existsSync(builtAddon))(
  "NUVEC_CUDA_NATIVE_ADDON naming the addon by another name: the file loaded is the file checked (child processes)",
  () => {
    const addon = existsSync(builtAddon) ? readFileSync(builtAddon) : Buffer.alloc(0);
    const dist = join(packageRoot, "dist", "index.js");
    /** A folder holding the addon cut to three quarters as `addon.node`. */
    const withCutAddon = () => {
      const folder = emptyPackage();
      writeFileSync(join(folder, "addon.node"), addon.subarray(0, Math.floor((addon.length * 3) / 4)));
      return folder;
    };
    const outcomeOf = (named: string) => {
      const script = `
        const { loadCudaBackend } = await import(${JSON.stringify(dist)});
        try { loadCudaBackend(); console.log(JSON.stringify({ loaded: true })); }
        catch (e) { console.log(JSON.stringify({ name: e.name, reason: e.reason, path: e.path, message: e.message })); }`;
      const env = { ...process.env, NUVEC_CUDA_NATIVE_ADDON: named };
      // A hang (a FIFO or /dev/zero read as JavaScript) ends at the timeout and fails here.
      return reportOf(runInChild(script, { env, timeout: 30_000 })) as {
        name: string;
        reason: string;
        path: string;
        message: string;
      };
    };
    const cut = "it is truncated: ";
    const notAFile = (kind: string) => `it is ${kind}, not a file`;
    const named = "its name does not end in .node";

    it.each<[string, (folder: string) => string, string, string]>([
      [
        "the path without .node, the cut addon.node beside it",
        (f) => join(f, "addon"),
        "load-failed",
        "it does not exist",
      ],
      [
        "a cut addon with no extension",
        (f) => {
          writeFileSync(join(f, "addon"), readFileSync(join(f, "addon.node")));
          return join(f, "addon");
        },
        "damaged",
        named,
      ],
      [
        "a directory holding index.node",
        (f) => {
          mkdirSync(join(f, "dir"));
          writeFileSync(join(f, "dir", "index.node"), readFileSync(join(f, "addon.node")));
          return join(f, "dir");
        },
        "damaged",
        notAFile("a directory"),
      ],
      [
        "a directory whose package.json main is the cut .node",
        (f) => {
          writeFileSync(join(f, "package.json"), JSON.stringify({ main: "addon.node" }));
          return f;
        },
        "damaged",
        notAFile("a directory"),
      ],
      [
        "a symlink x.js to the cut .node",
        (f) => {
          symlinkSync(join(f, "addon.node"), join(f, "x.js"));
          return join(f, "x.js");
        },
        "damaged",
        cut,
      ],
      [
        "a symlink with no extension to the cut .node",
        (f) => {
          symlinkSync(join(f, "addon.node"), join(f, "link"));
          return join(f, "link");
        },
        "damaged",
        cut,
      ],
      ["/dev/zero", () => "/dev/zero", "damaged", notAFile("a character device")],
      [
        "a FIFO with no extension",
        (f) => {
          expect(spawnSync("mkfifo", [join(f, "fifo")]).status).toBe(0);
          return join(f, "fifo");
        },
        "damaged",
        notAFile("a FIFO"),
      ],
    ])("%s: refused, exit 0, nothing loaded", (_label, place, reason, defect) => {
      const path = place(withCutAddon());
      const outcome = outcomeOf(path);
      expect(outcome).toMatchObject({ name: "NativeUnavailableError", reason, path });
      expect(outcome.message).toContain(`${path} (NUVEC_CUDA_NATIVE_ADDON) `);
      expect(outcome.message).toContain(defect);
    });

    it("a symlink with any name to the whole addon loads it (the driver or GPU is what is missing here)", () => {
      const folder = emptyPackage();
      writeFileSync(join(folder, "whole.node"), addon);
      symlinkSync(join(folder, "whole.node"), join(folder, "x.js"));
      const outcome = outcomeOf(join(folder, "x.js"));
      if (cudaBackend === undefined) expect(outcome.reason).toBe("backend-unavailable");
      else expect(outcome).toEqual({ loaded: true });
    });
  },
);

describe.runIf(inPackage)("the build command (the package's bin)", () => {
  const script = join(packageRoot, "scripts", "build-from-source.mjs");
  const manifest = JSON.parse(readFileSync(join(packageRoot, "package.json"), "utf8"));

  it("is the package's one bin, and nothing builds at install", () => {
    expect(manifest.bin).toEqual({ "nuvec-cuda-native": "scripts/build-from-source.mjs" });
    expect(manifest.files).toContain("scripts/build-from-source.mjs");
    expect(manifest.gypfile).toBe(false);
    for (const hook of ["preinstall", "install", "postinstall"])
      expect(manifest.scripts[hook]).toBeUndefined();
    expect(readFileSync(script, "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
  });

  it("--help describes it (through @nuvec/metal-native's builder); a bad argument is one line and exit 2", () => {
    const help = spawnSync(process.execPath, [script, "--help"], { encoding: "utf8" });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain("usage: npx @nuvec/cuda-native build [--quiet]");
    expect(help.stdout).toContain("not the CUDA toolkit");
    const bad = spawnSync(process.execPath, [script, "--colour"], { encoding: "utf8" });
    expect(bad.status).toBe(2);
    expect(bad.stderr.split("\n")[0]).toBe("@nuvec/cuda-native: unknown argument --colour");
  });
});
