import { packageBuild } from "../../tsup.shared.js";

export default packageBuild({
  entry: ["src/index.ts", "src/mock.ts", "src/addon.ts"],
  platform: "node",
  // import.meta.url (to find the package root and the addon) also works in the CommonJS build.
  shims: true,
  // One copy of the error classes shared by both entries in the CommonJS build too, so `instanceof
  // NuvecError` holds across `@nuvec/metal-native` and `@nuvec/metal-native/mock`.
  splitting: true,
  // @nuvec/native-core is private and never published: a devDependency, so esbuild bundles its code, and
  // its declarations are read from its sources (paths) so that they are inlined too, not imported.
  dts: {
    compilerOptions: {
      stripInternal: true,
      paths: {
        "@nuvec/native-core": ["../native-core/src/index.ts"],
        "@nuvec/native-core/addon": ["../native-core/src/addon.ts"],
      },
    },
  },
});
