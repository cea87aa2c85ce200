import { packageBuild } from "../../tsup.shared.js";

export default packageBuild({ entry: ["src/index.ts", "src/node.ts"] });
