// Names util/ gives the other layers, not users.
export { MINIMUM_NODE, requireSupportedNode, unsupportedNode } from "./node-version.js";
