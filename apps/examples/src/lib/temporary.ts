// The example programs' temporary folders: the repository's one mechanism (scripts/temporary.mjs), removed
// on every way out, signals included. Bundled into dist/ by tsup.
export { type TemporaryFolder, temporaryFolder } from "../../../../scripts/temporary.mjs";
