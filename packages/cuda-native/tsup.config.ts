import { packageBuild } from "../../tsup.shared.js";

export default packageBuild({
  entry: ["src/index.ts"],
  platform: "node",
  // Maps for debugging the local build; the tarball leaves them out ("!dist/**/*.map" in package.json).
  sourcemap: true,
  // import.meta.url (to find the package root and the addon) also works in the CommonJS build.
  shims: true,
});
