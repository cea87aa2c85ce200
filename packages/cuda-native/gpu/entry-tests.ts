// The package's tests in one bundle for `node --test` on the GPU machine (gpu/bundle.mjs, gpu/run.sh).
import "../test/loader.test.js";
import "../test/cuda.test.js";
import "../test/contract-cuda.test.js";
import "../test/raw-addon.test.js";
import "../test/address-space.test.js";
