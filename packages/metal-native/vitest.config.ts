import { packageTests } from "../../vitest.shared.js";

// The host leak test collects garbage to let quarantined memory (views collected before release) go.
export default packageTests({ test: { execArgv: ["--expose-gc"] } });
