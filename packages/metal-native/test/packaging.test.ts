// What is published: the two entries of the package share one copy of the error classes, in ESM and in
// CommonJS alike, so that `instanceof NuvecError` holds whichever entry an error came from; and the shared
// native core travels inside the package.
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { describePublishedBackend } from "@nuvec/native-core/published";
import { describe, expect, it } from "vitest";
import { thrown } from "../../native-core/test/support.js";

const require = createRequire(import.meta.url);

describe("packaging", () => {
  it("CommonJS: the main entry and ./mock share the error classes", () => {
    const main = require("../dist/index.cjs");
    const mock = require("../dist/mock.cjs");
    expect(mock.NuvecError).toBe(main.NuvecError);
    expect(mock.ArgumentError).toBe(main.ArgumentError);
    expect(thrown(() => new mock.MockBackend().newBuffer(-1))).toBeInstanceOf(main.NuvecError);
  });

  it("ESM: the main entry and ./mock share the error classes", async () => {
    const main = await import("../dist/index.js");
    const mock = await import("../dist/mock.js");
    expect(mock.NuvecError).toBe(main.NuvecError);
  });
});

// The shared native core is a private workspace package: what `npx @nuvec/metal-native build` and the
// prebuilds compile is inside the published package (Linux and macOS).
describePublishedBackend(fileURLToPath(new URL("..", import.meta.url)), ["linux", "mac"]);
