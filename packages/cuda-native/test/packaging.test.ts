// The shared native core is a private workspace package: what `npx @nuvec/cuda-native build` and the GPU
// machine's g++ compile is inside the published package (Linux only).
import { fileURLToPath } from "node:url";
import { describePublishedBackend } from "@nuvec/native-core/published";

describePublishedBackend(fileURLToPath(new URL("..", import.meta.url)), ["linux"]);
