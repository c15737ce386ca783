// The command checks Node's version before it loads anything else (main.ts); the check is util's.
export { MINIMUM_NODE, unsupportedNode } from "../util/internal.js";
