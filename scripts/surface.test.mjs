// The published surface (issue 14): every entry's declarations export exactly the approved names and no
// `@internal` member; every error class of every package derives from NuvecError, is in docs/ERRORS.md's
// table with its codes, and is `instanceof` across the ESM and CommonJS builds. Reads the built packages
// (`pnpm turbo run build` first; `npm test` builds before it runs this).
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { declaredExports, documentedErrors, ENTRIES, internalDeclarations, root } from "./surface.mjs";

const require = createRequire(import.meta.url);

// The approved surface of each entry. A name added here must be documented in the package's README (errors
// in docs/ERRORS.md); a name that leaves is a breaking change and needs a changeset.
const NATIVE_TYPES = [
  "BackendPlatform",
  "DeviceFacts",
  "HostMemoryHandle",
  "MetalMemoryHandle",
  "MockMemoryHandle",
  "NativeAllocation",
  "NativeBackend",
  "NativeBuffer",
  "NativeCounters",
  "NativeMappedFile",
  "NativeMemoryHandle",
  "NativeResidencySet",
];
const NATIVE_ERRORS = [
  "NativeAllocationError",
  "NativeArgumentError",
  "NativeError",
  "NativeErrorCode",
  "NativeReleasedError",
  "NativeSystemError",
  "NativeUnavailableError",
];
const MOCK = [
  ...NATIVE_TYPES,
  ...NATIVE_ERRORS,
  "MOCK_DEFAULTS",
  "MockBackend",
  "MockBackendOptions",
  "MockBuffer",
  "MockCall",
  "MockCallCounts",
  "MockCallName",
  "MockCallOutcome",
  "MockMappedFile",
  "MockMappedFileSource",
  "MockMappingFailure",
  "MockResidencySet",
  "MockResidencySetCalls",
  "MockWiringFault",
  "NuvecArgumentError",
  "NuvecError",
];
const APPROVED = {
  "@nuvec/stats": [
    "FormatMemoryStatsOptions",
    "MEMORY_STATS_FIELDS",
    "MemoryStats",
    "NuvecArgumentError",
    "NuvecError",
    "PAGE",
    "SMALL",
    "allocationSize",
    "assertByteCount",
    "ByteCountProblem",
    "ByteCountRange",
    "byteCountProblem",
    "describeValue",
    "emptyMemoryStats",
    "formatBytes",
    "formatMemoryStats",
    "mappingSize",
  ],
  "@nuvec/allocator": [
    "ALLOCATION_FAILED_CODE",
    "Allocation",
    "AllocatorArgumentError",
    "AllocatorClosedError",
    "AllocatorCounters",
    "AllocatorError",
    "AllocatorOptions",
    "AllocatorPolicy",
    "BoundedRelease",
    "BufferSource",
    "BufferTooLargeError",
    "CachingAllocator",
    "CountingBufferSource",
    "DEFAULT_POLICY",
    "DEFAULT_RESERVE_RATIO",
    "DoubleFreeError",
    "ForeignAllocationError",
    "Mapping",
    "NuvecArgumentError",
    "NuvecError",
    "OutOfMemoryError",
    "ReplayOptions",
    "ReplayResult",
    "ResourceLimitError",
    "SystemAllocationError",
    "Trace",
    "TraceAllocate",
    "TraceClearCache",
    "TraceError",
    "TraceEvent",
    "TraceFree",
    "TraceHeader",
    "TraceLimit",
    "TraceMap",
    "TraceOpening",
    "TraceRecorder",
    "TraceReplay",
    "TraceResetPeak",
    "TraceUnmap",
    "TraceValidator",
    "isAllocationFailure",
    "isTraceEvent",
    "replayTrace",
  ],
  "@nuvec/allocator/node": [
    "DEFAULT_MAX_LINE_LENGTH",
    "Trace",
    "TraceSource",
    "TraceStreamOptions",
    "readTrace",
    "replayTraceFile",
    "replayTraceStream",
    "streamTrace",
    "streamTraceBatches",
  ],
  "@nuvec/residency": [
    "DEFAULT_MAX_PERCENT_PER_SET",
    "MAX_PERCENT_PER_SET_VARIABLE",
    "MAX_RESIDENCY_SETS",
    "MIN_RESIDENCY_SET_BYTES",
    "NuvecArgumentError",
    "NuvecError",
    "Residency",
    "ResidencyArgumentError",
    "ResidencyBackend",
    "ResidencyError",
    "ResidencyErrorCode",
    "ResidencyOptions",
    "ResidencySetHandle",
    "ResidencyStateError",
    "maxPercentPerSet",
    "maxPercentPerSetFromEnvironment",
    "residencySetCap",
  ],
  "@nuvec/metal-native": [
    ...NATIVE_TYPES,
    ...NATIVE_ERRORS,
    "NativeAddonBackend",
    "NativeAddonBuffer",
    "NativeAddonMappedFile",
    "NativeAddonResidencySet",
    "NativeNotHostVisibleError",
    "NativeUnavailableReason",
    "NuvecArgumentError",
    "NuvecError",
    "deviceFacts",
    "loadNativeBackend",
  ],
  "@nuvec/metal-native/mock": MOCK,
  "@nuvec/metal-native/addon": [
    "AddonAllocation",
    "AddonBackend",
    "AddonBuffer",
    "AddonMappedFile",
    "AddonResidencySet",
    "AllocationKind",
    "RawAddon",
    "RawAllocationHandle",
    "RawBufferHandle",
    "RawFacts",
    "RawMappedFileHandle",
    "RawResidencySetHandle",
    "callNative",
  ],
  "@nuvec/device": [
    "AllocatorArgumentError",
    "AllocatorError",
    "AllocatorPolicy",
    "BoundedRelease",
    "BufferFreedError",
    "BufferTooLargeError",
    "Device",
    "DeviceArgumentError",
    "DeviceBuffer",
    "DeviceClosedError",
    "DeviceCounters",
    "DeviceError",
    "DeviceErrorCode",
    "DeviceInfo",
    "DeviceMemoryHandle",
    "DeviceNative",
    "DeviceOptions",
    "ForeignBufferError",
    "FormatMemoryStatsOptions",
    "FreeOptions",
    "MappedFile",
    "MappedSafetensors",
    "MappingReleasedError",
    "MemoryNotHostVisibleError",
    "MemoryStats",
    "MetalOptions",
    "NuvecArgumentError",
    "NuvecError",
    "OutOfMemoryError",
    "ResourceLimitError",
    "SAFETENSORS_DTYPE_BYTES",
    "SafetensorsFormatError",
    "SafetensorsHeader",
    "SafetensorsTensor",
    "SystemAllocationError",
    "Trace",
    "TraceEvent",
    "TraceHeader",
    "TraceRecordingError",
    "WiredLimitError",
    "emptyMemoryStats",
    "formatBytes",
    "formatMemoryStats",
    "mapSafetensors",
    "readSafetensorsHeader",
  ],
  "@nuvec/device/mock": MOCK,
  "@nuvec/cuda-native": [
    "CudaBackend",
    "CudaBackendOptions",
    "CudaBuffer",
    "CudaBufferHandle",
    "CudaMappedFile",
    "CudaMappedFileHandle",
    "CudaResidencySet",
    "NativeNotHostVisibleError",
    "NativeUnavailableError",
    "NuvecArgumentError",
    "NuvecError",
    "loadCudaBackend",
  ],
};

const builds = await Promise.all(
  ENTRIES.map(async (entry) => {
    const file = join(root, entry.folder, entry.js);
    return {
      ...entry,
      esm: await import(pathToFileURL(file).href),
      cjs: require(file.replace(/\.js$/, ".cjs")),
    };
  }),
);
const stats = builds.find((build) => build.specifier === "@nuvec/stats");
const errorsTable = documentedErrors(readFileSync(join(root, "docs/ERRORS.md"), "utf8"));

/** The exported error classes of a module namespace: every export whose name ends in `Error`. */
function errorClasses(namespace) {
  return Object.entries(namespace).filter(([name]) => /Error$/.test(name));
}

describe("published declarations", () => {
  it("ENTRIES names every entry of every package's exports map", () => {
    const published = [];
    for (const name of readdirSync(join(root, "packages"))) {
      const manifest = JSON.parse(readFileSync(join(root, "packages", name, "package.json"), "utf8"));
      for (const key of Object.keys(manifest.exports ?? {})) {
        if (key !== "./package.json")
          published.push(key === "." ? manifest.name : `${manifest.name}/${key.slice(2)}`);
      }
    }
    expect(ENTRIES.map((entry) => entry.specifier).sort()).toEqual(published.sort());
  });

  it.each(ENTRIES.map((entry) => [entry.specifier, entry]))(
    "%s exports the approved names only",
    (specifier, entry) => {
      expect(declaredExports(join(root, entry.folder, entry.dts))).toEqual([...APPROVED[specifier]].sort());
    },
    // A TypeScript program per entry: seconds on a loaded machine.
    60_000,
  );

  it.each(ENTRIES.map((entry) => [entry.folder]))("%s ships no @internal declaration", (folder) => {
    const dist = join(root, folder, "dist");
    const declarations = readdirSync(dist).filter((name) => /\.d\.c?ts$/.test(name));
    expect(declarations.length).toBeGreaterThan(0);
    for (const name of declarations) expect(internalDeclarations(join(dist, name)), name).toEqual([]);
  });
});

describe("one error family", () => {
  it("every exported error class derives from NuvecError and is named as it is exported", () => {
    for (const build of builds) {
      for (const [format, namespace, root] of [
        ["esm", build.esm, stats.esm.NuvecError],
        ["cjs", build.cjs, stats.cjs.NuvecError],
      ]) {
        for (const [name, value] of errorClasses(namespace)) {
          const where = `${build.specifier} (${format}) ${name}`;
          expect(typeof value, where).toBe("function");
          expect(
            value === root || Object.prototype.isPrototypeOf.call(root.prototype, value.prototype),
            where,
          ).toBe(true);
          // The name is the class's identity across copies (NuvecError's Symbol.hasInstance).
          expect(value.name, where).toBe(name);
        }
      }
    }
  });

  it("no two error classes share a name: an export of one name is one class in every entry", () => {
    const byName = new Map();
    for (const build of builds) {
      for (const [name, value] of errorClasses(build.esm)) {
        if (byName.has(name)) expect(value, `${build.specifier} ${name}`).toBe(byName.get(name));
        else byName.set(name, value);
      }
    }
  });

  it("docs/ERRORS.md lists exactly the exported error classes, each with the entry that exports it", () => {
    const exported = new Set(builds.flatMap((build) => errorClasses(build.esm).map(([name]) => name)));
    expect(errorsTable.map((row) => row.name).sort()).toEqual([...exported].sort());
    const table = readFileSync(join(root, "docs/ERRORS.md"), "utf8").split("\n");
    for (const build of builds) {
      for (const [name] of errorClasses(build.esm)) {
        const row = table.find((line) => line.startsWith(`| \`${name}\``));
        const owner = build.specifier.replace(/^@nuvec\/(metal-native|device)\/mock$/, (_, pkg) =>
          pkg === "device" ? "@nuvec/device/mock" : "./mock",
        );
        const listed = row.includes(`\`${owner}\``) || row.includes("every package");
        expect(listed, `${name} is exported by ${build.specifier}: say so in its row`).toBe(true);
      }
    }
  });

  it("docs/ERRORS.md documents every code the sources throw, and no other", () => {
    const sourceCodes = new Set();
    const walk = (folder) => {
      for (const entry of readdirSync(folder, { withFileTypes: true })) {
        const path = join(folder, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (/\.(ts|cc|h|mm)$/.test(entry.name) && !/\.test\.ts$/.test(entry.name)) {
          for (const match of readFileSync(path, "utf8").matchAll(/ERR_NUVEC_[A-Z_]+/g))
            sourceCodes.add(match[0]);
        }
      }
    };
    for (const folder of ["stats", "allocator", "residency", "device", "metal-native", "cuda-native"]) {
      walk(join(root, "packages", folder, "src"));
    }
    const documented = new Set(errorsTable.flatMap((row) => row.codes));
    expect([...documented].sort()).toEqual([...sourceCodes].sort());
    for (const row of errorsTable.filter((row) => !row.base))
      expect(row.codes.length, `${row.name} has a code`).toBeGreaterThan(0);
  });

  it("instanceof and isInstance hold across the ESM and CommonJS builds, for every error class", () => {
    for (const build of builds) {
      for (const [name, EsmClass] of errorClasses(build.esm)) {
        const CjsClass = build.cjs[name];
        expect(CjsClass, `${build.specifier} ${name} (cjs)`).not.toBe(EsmClass);
        // Every constructor only records its arguments, so placeholders make a valid instance.
        const fromEsm = new EsmClass("a", "b", undefined, "ERR_NUVEC_TEST");
        const fromCjs = new CjsClass("a", "b", undefined, "ERR_NUVEC_TEST");
        for (const [error, OtherBuild] of [
          [fromEsm, CjsClass],
          [fromCjs, EsmClass],
        ]) {
          expect(error instanceof OtherBuild, `${name}`).toBe(true);
          expect(OtherBuild.isInstance(error), `${name}`).toBe(true);
          expect(error instanceof stats.esm.NuvecError && error instanceof stats.cjs.NuvecError).toBe(true);
          const isArgument = typeof error.argument === "string";
          expect(error instanceof stats.esm.NuvecArgumentError, `${name} argument error`).toBe(isArgument);
          expect(error instanceof stats.cjs.NuvecArgumentError, `${name} argument error`).toBe(isArgument);
        }
      }
    }
    // And a class never matches an error of an unrelated class.
    const allocator = builds.find((build) => build.specifier === "@nuvec/allocator");
    const oom = new allocator.esm.OutOfMemoryError(1, 2, 3, 4);
    expect(oom instanceof allocator.cjs.ResourceLimitError).toBe(false);
    expect(oom instanceof allocator.cjs.AllocatorArgumentError).toBe(false);
    expect(oom instanceof allocator.cjs.AllocatorError).toBe(true);
    expect(new Error("x") instanceof allocator.cjs.AllocatorError).toBe(false);
  });
});
