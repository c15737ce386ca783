/**
 * assets/'s names for the rest of `testing/` and the CLI, not for users: no package entry point maps
 * this file (docs/architecture.md).
 */
export { isInstalled } from "./build.js";
export { quoteLog } from "./errors.js";
export { kwokStagesPath } from "./locate.js";
export { isProcessAlive } from "./lock.js";
export {
  type ComponentSpec,
  componentDirName,
  componentOf,
  HELM_VERSION,
  MINIMUM_GO,
  minorOf,
  OLM_API_VERSION,
  OLM_VERSION,
} from "./versions.js";
