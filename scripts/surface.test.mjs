// The published surface: every entry's declarations export exactly the approved names and no
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
// in docs/ERRORS.md); a name that leaves is a breaking change and needs a changeset. Written as words.
function names(text) {
  return text.split(/\s+/).filter(Boolean);
}
/** What every native backend entry exports: the backend's types and the errors it throws. */
const NATIVE = `
  BackendPlatform DeviceFacts HostMemoryHandle MetalMemoryHandle MockMemoryHandle NativeAllocation
  NativeBackend NativeBuffer NativeCounters NativeMappedFile NativeMemoryHandle NativeResidencySet
  ViewMechanism ArgumentError NativeUnavailableError NativeUnavailableReason NuvecError OutOfMemoryError StateError
  SystemCallError UnsupportedError
  KERNEL_PARAMETER_KINDS KernelParameterKind MockKernel NativeEvent NativeKernel NativeKernelArgument
  NativeLaunchShape NativeModule NativeModuleSource NativeStream NativeStreamCalls
`;
const MOCK = names(`${NATIVE}
  MOCK_DEFAULTS MockBackend MockBackendOptions MockBuffer MockBufferRange MockCall MockCallCounts
  MockCallName MockCallOutcome MockMappedFile MockMappedFileSource MockMappingFailure MockResidencySet
  MockResidencySetCalls MockWiringFault
  MockEvent MockKernelHandle MockKernelRun MockModule MockStream MockStreamCompletion MockStreamOptions
`);
const APPROVED = {
  "@nuvec/stats": names(`
    ArgumentError ArgumentErrorCode ByteCountProblem ByteCountRange ERROR_CODES Fields FormatError
    FormatErrorCode FormatMemoryStatsOptions MEMORY_STATS_FIELDS MemoryStats NativeUnavailableError
    NativeUnavailableReason NuvecError NuvecErrorCode OptionsSchema OutOfMemoryError OutOfMemoryErrorByCode
    OutOfMemoryErrorCode OutOfMemoryErrorFields OutOfMemoryErrorOf PAGE Rule SMALL SchemaType StateError StateErrorCode SystemCallError Teardown UnsupportedError
    UnsupportedErrorCode allocationSize assertByteCount byteCountProblem checkArgument describeValue
    emptyMemoryStats formatBytes formatMemoryStats mappingSize optionsSchema printable rules
  `),
  "@nuvec/allocator": names(`
    ALLOCATION_FAILED_CODE ALLOCATOR_POLICIES Allocation AllocatorCounters AllocatorOptions AllocatorPolicy
    ArgumentError BOUNDED_RELEASES BoundedRelease BufferSource CachingAllocator CountingBufferSource CountingMappingSource
    DEFAULT_BOUNDED_RELEASE DEFAULT_POLICY DEFAULT_RESERVE_RATIO EXPANDABLE_SEGMENT_DEFAULTS FormatError Mapping MappingSource
    NuvecError OutOfMemoryError PackedTrace ReplayOptions ReplayResult SEGMENT_DEFAULTS SEGMENT_OPTIONS_RULE SegmentOptions StateError Trace
    TraceAllocate TraceAllocatorSetup TraceClearCache TraceEvent TraceFree TraceHeader TraceIdMap TraceLimit
    TraceLabel TraceMap TraceMark TraceOpening TraceRecorder TraceRecorderOptions TraceReplay TraceResetPeak
    TraceStack TraceUnmap TraceValidator
    checkSegmentOptions isAllocationFailure isTraceEvent packTrace replayOptionsFromHeader replayTrace
  `),
  "@nuvec/allocator/node": names(`
    DEFAULT_MAX_LINE_LENGTH Trace TraceSource TraceStreamOptions readTrace replayTraceFile replayTraceStream
    streamTrace streamTraceBatches
  `),
  "@nuvec/residency": names(`
    ArgumentError DEFAULT_MAX_PERCENT_PER_SET MAX_PERCENT_PER_SET_VARIABLE MAX_RESIDENCY_SETS
    MIN_RESIDENCY_SET_BYTES NuvecError Residency ResidencyBackend ResidencyOptions ResidencySetHandle
    StateError maxPercentPerSet maxPercentPerSetFromEnvironment residencySetCap
  `),
  "@nuvec/metal-native": names(`${NATIVE}
    NativeAddonBackend NativeAddonBuffer NativeAddonMappedFile NativeAddonResidencySet deviceFacts
    loadNativeBackend
  `),
  "@nuvec/metal-native/mock": MOCK,
  "@nuvec/metal-native/addon": names(`
    AddonAllocation AddonBackend AddonBuffer AddonBufferRange AddonMappedFile AddonOwner AddonResidencySet
    AllocationKind NativeAddonBufferRange RawAddon RawAllocationHandle RawBufferHandle RawFacts
    RawMappedFileHandle RawResidencySetHandle RawEventHandle RawKernelArgument RawKernelHandle RawModuleHandle
    RawStreamCalls RawStreamHandle SlotCalls ViewBookkeeping callNative checkByteCount
    NativeBinaryCheck checkNativeBinary nativeBinaryDefect
  `),
  "@nuvec/device": names(`
    ALLOCATOR_POLICIES AllocatorPolicy ArgumentError BOUNDED_RELEASES BoundedRelease Device DeviceBuffer DeviceCounters DeviceInfo
    DeviceMemoryHandle DeviceNative DeviceOptions FormatError FormatMemoryStatsOptions FreeOptions
    MallocOptions TraceOptions MappedFile MappedSafetensors MemoryStats MetalOptions NativeUnavailableError NuvecError NuvecErrorCode
    OutOfMemoryError OutOfMemoryErrorByCode OutOfMemoryErrorCode OutOfMemoryErrorFields OutOfMemoryErrorOf
    SAFETENSORS_DTYPE_BYTES SafetensorsHeader SafetensorsTensor StateError SystemCallError
    Trace TraceEvent TraceHeader UnsupportedError ViewMechanism emptyMemoryStats formatBytes formatMemoryStats
    mapSafetensors readSafetensorsHeader SafetensorsTensorData WriteSafetensorsOptions writeSafetensors
    Kernel KernelArgument KernelModule KernelParameterKind LaunchShape MockKernel NativeModuleSource
    ScalarArgument Stream StreamCopyOptions StreamEvent
  `),
  "@nuvec/device/mock": MOCK,
  "@nuvec/cuda-native": names(`
    ArgumentError CudaBackend CudaBackendOptions CudaBuffer CudaBufferHandle CudaBufferRange CudaMappedFile
    CudaMappedFileHandle CudaResidencySet NativeUnavailableError NuvecError OutOfMemoryError StateError
    SystemCallError UnsupportedError loadCudaBackend
  `),
  "@nuvec/memory-view": names(`
    AddressedSource Applied BandsView ChromeCounterEvent ChromeTraceExport ColumnSeries Columns CoreInput CoreModel
    CoreSeries DeviceFacts DrawContext DrawTarget FigureTable FormatError INFLATED_FLOOR_BYTES MARKS_IN_FORMAT MAX_INFLATION
    MAX_SNAPSHOT_BYTES MemoryViewCore MemoryViewDocument MemoryViewDrawing MemoryViewTicks NuvecError
    PeaksView PickleStream PickleValue PolicyOutcome PolicyRun PolicyRunOptions RecordedWorkload ReplayDevice
    SourceListener Tick TickLayout TorchExportCounts TorchSnapshotExport TorchWorkload ViewReplayOptions
    ViewReplayResult WorkloadRecorder isMark looksLikeTorchSnapshot memoryViewCore memoryViewDrawing
    memoryViewTicks readTorchSnapshot renderMemoryView replayDevice replayForView streamFilteringMarks
    streamMarkedTrace writePickle deviceLine figureTable ReplayedTrace torchFacts
  `),
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
      if (manifest.private) continue; // @nuvec/native-core: bundled into the backends, never published
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
  const kinds = Object.keys(stats.esm.ERROR_CODES);

  it("every exported error class is the root or one of the seven kinds of @nuvec/stats, the same class in every entry", () => {
    for (const build of builds) {
      for (const [format, namespace, family] of [
        ["esm", build.esm, stats.esm],
        ["cjs", build.cjs, stats.cjs],
      ]) {
        for (const [name, value] of errorClasses(namespace)) {
          const where = `${build.specifier} (${format}) ${name}`;
          expect(["NuvecError", ...kinds], where).toContain(name);
          expect(value, where).toBe(family[name]);
        }
      }
    }
  });

  it("docs/ERRORS.md lists exactly the root and the seven kinds", () => {
    expect(errorsTable.map((row) => row.name).sort()).toEqual(["NuvecError", ...kinds].sort());
  });

  it("docs/ERRORS.md documents every code the sources throw, and no other", () => {
    const sourceCodes = new Set();
    const walk = (folder) => {
      for (const entry of readdirSync(folder, { withFileTypes: true })) {
        const path = join(folder, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (/\.(ts|cc|h|mm)$/.test(entry.name) && !/\.test\.ts$/.test(entry.name)) {
          for (const match of readFileSync(path, "utf8").matchAll(/ERR_NUVEC_[A-Z_]*[A-Z]/g))
            sourceCodes.add(match[0]);
        }
      }
    };
    const folders = "stats allocator residency device native-core metal-native cuda-native memory-view".split(
      " ",
    );
    for (const folder of folders) {
      walk(join(root, "packages", folder, "src"));
    }
    const documented = new Set(errorsTable.flatMap((row) => row.codes));
    expect([...documented].sort()).toEqual([...sourceCodes].sort());
    for (const row of errorsTable.filter((row) => !row.base))
      expect(row.codes.length, `${row.name} has a code`).toBeGreaterThan(0);
  });

  it("instanceof holds across the ESM and CommonJS builds for every kind, and for no other kind", () => {
    const make = (family, kind) => {
      const code = family.ERROR_CODES[kind][0];
      if (kind === "ArgumentError") return new family.ArgumentError("bytes", "x");
      if (kind === "SystemCallError")
        return new family.SystemCallError("x", { syscall: "open", errno: "ENOENT", errnoNumber: 2 });
      if (kind === "NativeUnavailableError") return new family.NativeUnavailableError("x");
      return new family[kind](code, "x");
    };
    for (const [from, to] of [
      [stats.esm, stats.cjs],
      [stats.cjs, stats.esm],
    ]) {
      for (const kind of kinds) {
        const error = make(from, kind);
        expect(error instanceof to.NuvecError, kind).toBe(true);
        for (const other of kinds)
          expect(error instanceof to[other], `${kind} instanceof ${other}`).toBe(other === kind);
      }
    }
    expect(new Error("x") instanceof stats.cjs.NuvecError).toBe(false);
  });
});
