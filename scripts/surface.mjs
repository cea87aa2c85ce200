// What each published package exports: the names its built declarations (dist/*.d.ts) declare, read with the
// TypeScript compiler, and its error classes, read from its built JavaScript. scripts/surface.test.mjs compares
// them with the documented surface (the READMEs, docs/ERRORS.md).
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** A published entry: package folder, the specifier users import, and its built declarations and ESM file. */
function entry(name, subpath) {
  const file = subpath ?? "index";
  return {
    folder: `packages/${name}`,
    specifier: subpath === undefined ? `@nuvec/${name}` : `@nuvec/${name}/${subpath}`,
    dts: `dist/${file}.d.ts`,
    js: `dist/${file}.js`,
  };
}

/** Every published entry (each package's `exports`, less `./package.json`). */
export const ENTRIES = [
  entry("stats"),
  entry("allocator"),
  entry("allocator", "node"),
  entry("residency"),
  entry("metal-native"),
  entry("metal-native", "mock"),
  entry("metal-native", "addon"),
  entry("device"),
  entry("device", "mock"),
  entry("cuda-native"),
  entry("memory-view"),
];

let shared;

/**
 * One program over every entry's declarations (and `dtsPath`), made once: each program loads TypeScript's
 * standard library declarations, which cost far more than the entries themselves.
 */
function programWith(dtsPath) {
  if (shared?.roots.includes(dtsPath)) return shared.program;
  const roots = [
    ...new Set([...(shared?.roots ?? ENTRIES.map((item) => join(root, item.folder, item.dts))), dtsPath]),
  ];
  const program = ts.createProgram(roots, {
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    target: ts.ScriptTarget.ES2022,
    skipLibCheck: true,
    noEmit: true,
  });
  shared = { roots, program };
  return program;
}

/** The names a declaration file exports (values and types, re-exports followed), sorted. */
export function declaredExports(dtsPath) {
  const program = programWith(dtsPath);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(dtsPath);
  if (source === undefined) throw new Error(`${dtsPath}: not found (build the package first)`);
  const module = checker.getSymbolAtLocation(source);
  if (module === undefined) throw new Error(`${dtsPath}: not a module`);
  return checker
    .getExportsOfModule(module)
    .map((symbol) => symbol.getName())
    .sort();
}

/** The declarations of a declaration file that still carry an `@internal` tag (stripInternal removes them). */
export function internalDeclarations(dtsPath) {
  const text = readFileSync(dtsPath, "utf8");
  return text.split("\n").filter((line) => /@internal\b/.test(line));
}

/**
 * The rows of docs/ERRORS.md's class table: class name and its codes (every
 * `ERR_NUVEC_…` in the row's code column).
 */
export function documentedErrors(markdown) {
  const rows = [];
  for (const line of markdown.split("\n")) {
    const cells = line.split("|").map((cell) => cell.trim());
    // | `Class` | thrown when | `ERR_…`, … | fields |
    const name = /^`(\w+Error)`$/.exec(cells[1] ?? "")?.[1];
    if (name === undefined) continue;
    rows.push({
      name,
      codes: [...(cells[3] ?? "").matchAll(/ERR_NUVEC_[A-Z_]+/g)].map((match) => match[0]),
      // The root ("any code below") has no code of its own.
      base: /^any\b/.test(cells[3] ?? ""),
    });
  }
  return rows;
}
