import { packageTests } from "../../vitest.shared.js";

// The safety-net tests collect garbage on purpose.
export default packageTests({ test: { execArgv: ["--expose-gc"] } });
