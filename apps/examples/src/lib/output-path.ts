// Output paths of the example programs: the repository's one check (scripts/output-path.mjs), made before
// any work starts. Bundled into dist/ by tsup.
export { OutputPathError, prepareOutputPath } from "../../../../scripts/output-path.mjs";
