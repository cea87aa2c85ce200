// Checking an addon file before the dynamic loader sees it. `dlopen` maps every segment the header names and
// touches them (relocations, constructors): a segment that reaches past the end of a truncated file is a page
// with nothing behind it, and touching it raises SIGBUS, which kills the process. So each loader reads the
// header and its tables first, with plain reads that fail cleanly, and loads only a file whose every table and
// segment lies inside it. This guards against a damaged file (an interrupted download or copy, a full disk,
// a file overwritten in place); a file changed between this check and the load is not covered.
//
// What is checked must be what is loaded: `require` resolves a path before it loads it (extensions, a
// directory's package.json `main` or index file, symlinks to their real path) and picks the loader by the
// real path's extension, running anything but a `.node` file as JavaScript. So a loader asks
// `checkNativeBinary` for the real path, checks that one file, and requires that exact path: nothing is
// resolved after the check, and nothing but a `.node` file reaches `require`.

import { createHash } from "node:crypto";
import { closeSync, constants, fstatSync, openSync, readSync, realpathSync, statSync } from "node:fs";
import { extname, resolve } from "node:path";

/** The binary format a platform's dynamic loader reads. */
function formatOf(platform: string): "elf" | "mach-o" | undefined {
  if (platform === "darwin") return "mach-o";
  if (platform === "win32") return undefined;
  return "elf";
}

/** What kind of file a non-regular `fstat` result is, for the message. */
function kindOf(stats: import("node:fs").Stats): string {
  if (stats.isDirectory()) return "a directory";
  if (stats.isFIFO()) return "a FIFO";
  if (stats.isCharacterDevice()) return "a character device";
  if (stats.isBlockDevice()) return "a block device";
  if (stats.isSocket()) return "a socket";
  return "not a regular file";
}

/** A defect found while reading the file: the reason the check stops. */
class Defect extends Error {}

/** Random access to the file through one descriptor, every read bounds-checked against its size. */
class Reader {
  constructor(
    private readonly fd: number,
    readonly size: number,
  ) {}

  /** `length` bytes at `offset`; a defect naming `what` when they are not all in the file. */
  bytes(offset: number, length: number, what: string): Buffer {
    if (offset + length > this.size)
      throw new Defect(
        `it is truncated: ${what} ends at byte ${offset + length}, the file has ${this.size} bytes`,
      );
    const buffer = Buffer.alloc(length);
    let done = 0;
    while (done < length) {
      const read = readSync(this.fd, buffer, done, length - done, offset + done);
      if (read === 0) throw new Defect(`it is truncated: reading ${what} stopped at byte ${offset + done}`);
      done += read;
    }
    return buffer;
  }

  /** Throws a defect when [offset, offset + length) is not inside the file (both may be 64-bit). */
  within(offset: bigint | number, length: bigint | number, what: string): void {
    const end = BigInt(offset) + BigInt(length);
    if (end > BigInt(this.size))
      throw new Defect(`it is truncated: ${what} ends at byte ${end}, the file has ${this.size} bytes`);
  }

  /** The table of `count` entries of `entrySize` bytes at `offset` (may be 64-bit); a defect naming `what`. */
  table(offset: bigint | number, count: number, entrySize: number, what: string): Buffer {
    this.within(offset, tableLength(count, entrySize), what);
    return this.bytes(Number(offset), tableLength(count, entrySize), what);
  }
}

/** A table's entry count and entry size as a byte length, refusing counts no file holds. */
function tableLength(count: number, entrySize: number): number {
  return count * entrySize;
}

// ELF constants (the System V ABI's gABI).
const ET_DYN = 3;
const SHT_NOBITS = 8;
const PN_XNUM = 0xffff;

/** Checks an ELF shared object: its header, program headers, every segment and the section header table. */
function checkElf(file: Reader): void {
  const ident = file.bytes(0, 16, "the ELF identification");
  const elfClass = ident[4];
  const data = ident[5];
  if (elfClass !== 1 && elfClass !== 2)
    throw new Defect(`its ELF class ${elfClass} is neither 32- nor 64-bit`);
  if (data !== 1 && data !== 2)
    throw new Defect(`its ELF byte order ${data} is neither little- nor big-endian`);
  const wide = elfClass === 2;
  const little = data === 1;
  const header = file.bytes(0, wide ? 64 : 52, "the ELF header");
  const u16 = (buffer: Buffer, at: number) => (little ? buffer.readUInt16LE(at) : buffer.readUInt16BE(at));
  const u32 = (buffer: Buffer, at: number) => (little ? buffer.readUInt32LE(at) : buffer.readUInt32BE(at));
  const u64 = (buffer: Buffer, at: number) =>
    little ? buffer.readBigUInt64LE(at) : buffer.readBigUInt64BE(at);
  const word = (buffer: Buffer, at: number): bigint => (wide ? u64(buffer, at) : BigInt(u32(buffer, at)));
  const type = u16(header, 16);
  if (type !== ET_DYN)
    throw new Defect(`it is no shared library (ELF type ${type}, a shared library is ${ET_DYN})`);
  const phoff = word(header, wide ? 32 : 28);
  const shoff = word(header, wide ? 40 : 32);
  const phentsize = u16(header, wide ? 54 : 42);
  let phnum = u16(header, wide ? 56 : 44);
  const shentsize = u16(header, wide ? 58 : 46);
  let shnum = u16(header, wide ? 60 : 48);
  const phSize = wide ? 56 : 32;
  const shSize = wide ? 64 : 40;

  // Section header 0 holds the real counts when they do not fit the header's 16 bits.
  const section0 = (): Buffer => {
    if (shoff === 0n) throw new Defect("its header counts are in section 0, and it has no section headers");
    if (shentsize !== shSize) throw new Defect(`its section header size is ${shentsize}, not ${shSize}`);
    file.within(shoff, shSize, "the first section header");
    return file.bytes(Number(shoff), shSize, "the first section header");
  };
  if (phnum === PN_XNUM) phnum = u32(section0(), wide ? 44 : 28);
  if (phnum === 0) throw new Defect("it names no program headers (nothing to load)");
  if (phentsize !== phSize) throw new Defect(`its program header size is ${phentsize}, not ${phSize}`);
  const programs = file.table(phoff, phnum, phSize, `the table of its ${phnum} program headers`);
  for (let index = 0; index < phnum; index++) {
    const at = index * phSize;
    const offset = wide ? u64(programs, at + 8) : BigInt(u32(programs, at + 4));
    const filesz = wide ? u64(programs, at + 32) : BigInt(u32(programs, at + 16));
    file.within(offset, filesz, `segment ${index} (program header type 0x${u32(programs, at).toString(16)})`);
  }

  if (shoff === 0n) return;
  if (shnum === 0) {
    const real = word(section0(), wide ? 32 : 20);
    if (real > BigInt(file.size))
      throw new Defect(`it names ${real} sections, more than the file could hold`);
    shnum = Number(real);
  }
  if (shentsize !== shSize) throw new Defect(`its section header size is ${shentsize}, not ${shSize}`);
  if (shnum > 0) {
    const sections = file.table(shoff, shnum, shSize, `the table of its ${shnum} section headers`);
    for (let index = 1; index < shnum; index++) {
      const at = index * shSize;
      if (u32(sections, at + 4) === SHT_NOBITS) continue;
      const offset = word(sections, at + (wide ? 24 : 16));
      const size = word(sections, at + (wide ? 32 : 20));
      file.within(offset, size, `section ${index}`);
    }
  }
}

// Mach-O constants (<mach-o/loader.h>, <mach-o/fat.h>).
const MH_MAGIC = 0xfeedface;
const MH_MAGIC_64 = 0xfeedfacf;
const FAT_MAGIC = 0xcafebabe;
const FAT_MAGIC_64 = 0xcafebabf;
const MH_DYLIB = 6;
const MH_BUNDLE = 8;
const LC_SEGMENT = 0x1;
const LC_SYMTAB = 0x2;
const LC_SEGMENT_64 = 0x19;
/** Load commands that are a `linkedit_data_command` (a `dataoff`, `datasize` pair into the file). */
const LINKEDIT_DATA = new Set([0x1d, 0x1e, 0x26, 0x29, 0x2b, 0x2e, 0x80000033, 0x80000034]);

/** Checks one Mach-O image starting at `base` and `length` bytes long: its header, load commands and segments. */
function checkMachImage(file: Reader, base: number, length: number, what: string): void {
  if (length < 28) throw new Defect(`${what} is shorter than a Mach-O header (${length} bytes)`);
  const raw = file.bytes(base, 4, `${what}'s magic`);
  let little: boolean;
  if (raw.readUInt32LE(0) === MH_MAGIC || raw.readUInt32LE(0) === MH_MAGIC_64) little = true;
  else if (raw.readUInt32BE(0) === MH_MAGIC || raw.readUInt32BE(0) === MH_MAGIC_64) little = false;
  else throw new Defect(`${what} is not a Mach-O image (magic 0x${raw.readUInt32BE(0).toString(16)})`);
  const u32 = (buffer: Buffer, at: number) => (little ? buffer.readUInt32LE(at) : buffer.readUInt32BE(at));
  const u64 = (buffer: Buffer, at: number) =>
    little ? buffer.readBigUInt64LE(at) : buffer.readBigUInt64BE(at);
  const wide = u32(raw, 0) === MH_MAGIC_64;
  const headerSize = wide ? 32 : 28;
  const header = file.bytes(base, Math.min(headerSize, length), `${what}'s Mach-O header`);
  if (length < headerSize) throw new Defect(`${what} is shorter than its Mach-O header (${length} bytes)`);
  const filetype = u32(header, 12);
  if (filetype !== MH_BUNDLE && filetype !== MH_DYLIB)
    throw new Defect(`${what} is no loadable bundle or library (Mach-O file type ${filetype})`);
  const ncmds = u32(header, 16);
  const sizeofcmds = u32(header, 20);
  if (headerSize + sizeofcmds > length)
    throw new Defect(
      `it is truncated: the table of load commands of ${what} ends at byte ${headerSize + sizeofcmds}, ` +
        `the image has ${length} bytes`,
    );
  const commands = file.bytes(base + headerSize, sizeofcmds, `the table of load commands of ${what}`);
  // Offsets inside a (fat) slice are relative to the slice: check them against the slice's length.
  const inside = (offset: bigint, size: bigint, name: string) => {
    const end = offset + size;
    if (end > BigInt(length))
      throw new Defect(
        `it is truncated: ${name} of ${what} ends at byte ${end}, the image has ${length} bytes`,
      );
  };
  let at = 0;
  for (let index = 0; index < ncmds; index++) {
    if (at + 8 > sizeofcmds) throw new Defect(`${what}'s load command ${index} lies past its load commands`);
    const cmd = u32(commands, at);
    const cmdsize = u32(commands, at + 4);
    if (cmdsize < 8 || at + cmdsize > sizeofcmds)
      throw new Defect(
        `${what}'s load command ${index} has a size of ${cmdsize} bytes, past its load commands`,
      );
    const name = `load command ${index} (0x${cmd.toString(16)})`;
    const need = (bytes: number) => {
      if (cmdsize < bytes) throw new Defect(`${what}'s ${name} is ${cmdsize} bytes, shorter than its fields`);
    };
    if (cmd === LC_SEGMENT_64) {
      need(72);
      inside(u64(commands, at + 40), u64(commands, at + 48), `the segment of ${name}`);
    } else if (cmd === LC_SEGMENT) {
      need(56);
      inside(BigInt(u32(commands, at + 32)), BigInt(u32(commands, at + 36)), `the segment of ${name}`);
    } else if (cmd === LC_SYMTAB) {
      need(24);
      const entry = wide ? 16n : 12n;
      inside(BigInt(u32(commands, at + 8)), BigInt(u32(commands, at + 12)) * entry, `the symbols of ${name}`);
      inside(BigInt(u32(commands, at + 16)), BigInt(u32(commands, at + 20)), `the strings of ${name}`);
    } else if (LINKEDIT_DATA.has(cmd)) {
      need(16);
      inside(BigInt(u32(commands, at + 8)), BigInt(u32(commands, at + 12)), `the data of ${name}`);
    }
    at += cmdsize;
  }
}

/** Checks a Mach-O file: one image, or a universal (fat) file and each of its slices. */
function checkMachO(file: Reader): void {
  const magic = file.bytes(0, 4, "the Mach-O magic").readUInt32BE(0);
  if (magic !== FAT_MAGIC && magic !== FAT_MAGIC_64) {
    checkMachImage(file, 0, file.size, "the file");
    return;
  }
  const wide = magic === FAT_MAGIC_64;
  const count = file.bytes(4, 4, "the universal header").readUInt32BE(0);
  const entry = wide ? 32 : 20;
  const table = file.table(8, count, entry, `the table of its ${count} architectures`);
  for (let index = 0; index < count; index++) {
    const at = index * entry;
    const offset = wide ? table.readBigUInt64BE(at + 8) : BigInt(table.readUInt32BE(at + 8));
    const size = wide ? table.readBigUInt64BE(at + 16) : BigInt(table.readUInt32BE(at + 12));
    file.within(offset, size, `architecture ${index}`);
    checkMachImage(file, Number(offset), Number(size), `architecture ${index}`);
  }
}

/** The SHA-256 of the file behind `fd`, `size` bytes long, read in 1 MiB chunks. */
function digest(fd: number, size: number): string {
  const hash = createHash("sha256");
  const chunk = Buffer.alloc(Math.min(size, 1 << 20));
  let offset = 0;
  while (offset < size) {
    const read = readSync(fd, chunk, 0, Math.min(chunk.length, size - offset), offset);
    if (read === 0) throw new Defect(`it is truncated: reading it stopped at byte ${offset}`);
    hash.update(chunk.subarray(0, read));
    offset += read;
  }
  return hash.digest("hex");
}

/**
 * What is wrong with the native binary at `file` for `platform`'s dynamic loader, or `undefined` when it can
 * be handed to it: the file is a regular file, starts with the platform's format (ELF; Mach-O on macOS), and
 * every table and segment its header names lies inside it (ELF: program headers, each segment's
 * `p_offset + p_filesz`, the section header table and each section; Mach-O: the load commands, each segment's
 * `fileoff + filesize`, the symbol table and link-edit data, each slice of a universal file). Opens without
 * blocking (a FIFO is refused, not waited on) and reads only the header and tables.
 *
 * The header check cannot see a damaged byte inside a segment (a flipped bit in the code or the dynamic
 * symbols, which the dynamic loader may follow into a crash). Where the file's SHA-256 is known (`sha256`,
 * 64 hexadecimal digits: a prebuilt package ships its binary's), the whole file is hashed too, and a file that
 * differs is refused.
 */
export function nativeBinaryDefect(
  file: string,
  platform: string = process.platform,
  sha256?: string,
): string | undefined {
  const format = formatOf(platform);
  if (format === undefined) return undefined;
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === "ENOENT" ? "it does not exist" : `it cannot be opened (${code ?? String(error)})`;
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) return `it is ${kindOf(stats)}, not a file`;
    if (stats.size === 0) return "it is empty (0 bytes)";
    const reader = new Reader(fd, stats.size);
    const head = reader.bytes(0, Math.min(4, stats.size), "the magic number");
    const isElf = head.length === 4 && head.readUInt32BE(0) === 0x7f454c46;
    const magic = head.length === 4 ? head.readUInt32BE(0) : -1;
    const isMachO =
      head.length === 4 &&
      [MH_MAGIC, MH_MAGIC_64, FAT_MAGIC, FAT_MAGIC_64].some(
        (value) => value === magic || value === head.readUInt32LE(0),
      );
    if (format === "elf") {
      if (!isElf)
        return isMachO
          ? "it is a Mach-O binary (macOS), not ELF"
          : stats.size < 4
            ? `it is truncated to ${stats.size} bytes, shorter than an ELF header`
            : "it is not an ELF shared library (no ELF magic number)";
      checkElf(reader);
    } else {
      if (!isMachO)
        return isElf
          ? "it is an ELF binary (Linux), not Mach-O"
          : stats.size < 4
            ? `it is truncated to ${stats.size} bytes, shorter than a Mach-O header`
            : "it is not a Mach-O bundle (no Mach-O magic number)";
      checkMachO(reader);
    }
    if (sha256 !== undefined) {
      const actual = digest(fd, stats.size);
      if (actual !== sha256.toLowerCase())
        return `its SHA-256 is ${actual}, not ${sha256.toLowerCase()} as it was packed (changed or damaged since)`;
    }
    return undefined;
  } catch (error) {
    if (error instanceof Defect) return error.message;
    return `it cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`;
  } finally {
    closeSync(fd);
  }
}

/** What {@link checkNativeBinary} found: the file to load and, when it must not be loaded, why not. */
export interface NativeBinaryCheck {
  /** The real path of the file (absolute, symlinks resolved): the exact path to hand to `require`. */
  file: string;
  /** What is wrong with it, or `undefined` when it can be loaded. */
  defect: string | undefined;
  /** Whether nothing is at the path (a dangling symlink included): the loaders tell "not built" from damaged. */
  missing: boolean;
}

/**
 * The check a loader runs on an addon path before it loads it. `path` (relative to the working directory)
 * is resolved to its real path, symlinks followed, and nothing else: no extension is added, no directory is
 * looked into, so the file checked is the file `require(file)` then loads. A file that is not a regular file
 * (a directory, a FIFO, a device, `/dev/zero`) is refused without being read; one whose real name does not
 * end in `.node` is refused, because `require` would run it as JavaScript; then {@link nativeBinaryDefect}
 * checks its contents (the platform's shared-object format, every table and segment inside the file, the
 * SHA-256 when one is given). On Windows nothing is checked, as there.
 */
export function checkNativeBinary(
  path: string,
  platform: string = process.platform,
  sha256?: string,
): NativeBinaryCheck {
  const absolute = resolve(path);
  let file: string;
  try {
    file = realpathSync(absolute);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { file: absolute, defect: "it does not exist", missing: true };
    return { file: absolute, defect: `it cannot be opened (${code ?? String(error)})`, missing: false };
  }
  if (formatOf(platform) === undefined) return { file, defect: undefined, missing: false };
  // What it is before what it is called: a link to /dev/zero is a device, whatever its name.
  let stats: import("node:fs").Stats;
  try {
    stats = statSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { file, defect: `it cannot be opened (${code ?? String(error)})`, missing: code === "ENOENT" };
  }
  if (!stats.isFile()) return { file, defect: `it is ${kindOf(stats)}, not a file`, missing: false };
  if (extname(file) !== ".node") {
    const link = file === absolute ? "" : ` (a link to ${file})`;
    return {
      file,
      defect:
        `its name does not end in .node${link}: Node.js loads only a .node file as a native addon and would ` +
        "run this one as JavaScript",
      missing: false,
    };
  }
  return { file, defect: nativeBinaryDefect(file, platform, sha256), missing: false };
}
