// How the addon is found: the platform key (libc included), the platform packages' manifests agreeing with
// the loader's table, no install script anywhere, and the typed error when nothing fits.
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { NativeUnavailableError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { thrown } from "../../native-core/test/support.js";
import { openNativeBackendFile } from "../src/addon/loader.js";
import {
  ADDON_FILE_NAME,
  abiAddonFileName,
  detectLinuxLibc,
  PREBUILT_PACKAGES,
  platformKey,
} from "../src/platforms.js";

const packages = join(dirname(fileURLToPath(import.meta.url)), "../..");
const sourceBuild = join(packages, "metal-native", "native", "build", "Release", ADDON_FILE_NAME);
const manifest = (directory: string) =>
  JSON.parse(readFileSync(join(packages, directory, "package.json"), "utf8"));

describe("platform keys", () => {
  it("tell glibc from musl on Linux, and name other platforms by OS and CPU", () => {
    expect(platformKey("linux", "x64", () => "glibc")).toBe("linux-x64-gnu");
    expect(platformKey("linux", "arm64", () => "musl")).toBe("linux-arm64-musl");
    expect(platformKey("darwin", "arm64", () => "musl")).toBe("darwin-arm64");
    expect(platformKey("win32", "x64")).toBe("win32-x64");
  });

  it.skipIf(process.platform !== "linux")("this Linux runs on glibc (Debian)", () => {
    expect(detectLinuxLibc()).toBe("glibc");
  });
});

describe("platform packages", () => {
  const directories = readdirSync(packages).filter((name) => name.startsWith("metal-native-"));

  it("are exactly the loader's table, each an optional dependency of @nuvec/metal-native", () => {
    const names = directories.map((directory) => manifest(directory).name).sort();
    expect(names).toEqual(Object.values(PREBUILT_PACKAGES).sort());
    expect(Object.keys(manifest("metal-native").optionalDependencies).sort()).toEqual(names);
  });

  it.each(directories)(
    "%s: os, cpu and libc fields match its key, and it ships the addon only",
    (directory) => {
      const key = directory.replace(/^metal-native-/, "");
      const [os, cpu, libc] = key.split("-");
      const fields = manifest(directory);
      expect(fields.name).toBe(`@nuvec/${directory}`);
      expect(PREBUILT_PACKAGES[key]).toBe(fields.name);
      expect(fields.os).toEqual([os]);
      expect(fields.cpu).toEqual([cpu]);
      expect(fields.libc).toEqual(libc === undefined ? undefined : [libc === "gnu" ? "glibc" : libc]);
      // A Linux package holds one build per Node.js ABI besides the Node-API build (prebuild.mjs).
      const perAbi =
        os === "linux" ? ["nuvec_metal_native-abi*.node", "nuvec_metal_native-abi*.node.sha256"] : [];
      expect(fields.files).toEqual([
        ADDON_FILE_NAME,
        `${ADDON_FILE_NAME}.sha256`,
        ...perAbi,
        "README.md",
        "CHANGELOG.md",
      ]);
      expect(abiAddonFileName("115")).toBe("nuvec_metal_native-abi115.node");
      expect(fields.scripts.prepack).toBe(`node ../metal-native/scripts/prebuild.mjs ${key}`);
    },
  );

  it("no published package has an install script or a binding.gyp at its root", () => {
    for (const directory of readdirSync(packages)) {
      const fields = manifest(directory);
      for (const hook of ["preinstall", "install", "postinstall"])
        expect(fields.scripts?.[hook]).toBeUndefined();
      expect(readdirSync(join(packages, directory))).not.toContain("binding.gyp");
    }
  });
});

describe("loading a given addon file", () => {
  it("throws NativeUnavailableError (damaged) for a file that is no shared library, before loading it", () => {
    const notAnAddon = join(mkdtempSync(join(tmpdir(), "nuvec-loading-")), ADDON_FILE_NAME);
    writeFileSync(notAnAddon, "not an ELF or Mach-O file");
    const caught = thrown(() => openNativeBackendFile(notAnAddon));
    expect(caught).toBeInstanceOf(NativeUnavailableError);
    expect(caught).toMatchObject({
      code: "ERR_NUVEC_NATIVE_UNAVAILABLE",
      reason: "damaged",
      path: notAnAddon,
    });
    expect((caught as Error).message).toContain(`${notAnAddon} is damaged: it is not`);
    expect((caught as Error).message).toContain("npx @nuvec/metal-native build");
    expect((caught as Error).message).toContain("@nuvec/metal-native/mock");
  });

  it.runIf(existsSync(sourceBuild))(
    "a whole addon under a name without .node is damaged (require would run it as JavaScript), never loaded",
    () => {
      const renamed = join(mkdtempSync(join(tmpdir(), "nuvec-loading-")), "nuvec_metal_native");
      copyFileSync(sourceBuild, renamed);
      const caught = thrown(() => openNativeBackendFile(renamed));
      expect(caught).toMatchObject({ reason: "damaged", path: renamed });
      expect((caught as Error).message).toContain(
        `${renamed} is damaged: its name does not end in .node: Node.js loads only a .node file as a native ` +
          "addon and would run this one as JavaScript",
      );
    },
  );
});
