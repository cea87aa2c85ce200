#!/usr/bin/env node
// Prints node-addon-api's include directory (its package folder, where napi.h is) for kernel/binding.gyp.
// The examples take node-addon-api from @nuvec/metal-native's own pinned dependency (and node-gyp from the
// workspace root) rather than declaring them a second time; a runtime copying the example declares `node-addon-api` itself and
// writes `<!(node -p "require('node-addon-api').include_dir")` as packages/metal-native/binding.gyp does.
import { createRequire } from "node:module";
import { dirname } from "node:path";

const fromExamples = createRequire(import.meta.url);
const fromMetalNative = createRequire(fromExamples.resolve("@nuvec/metal-native/package.json"));
console.log(dirname(fromMetalNative.resolve("node-addon-api/package.json")));
