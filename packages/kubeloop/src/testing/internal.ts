/**
 * `testing/`'s names for other kubeloop layers, not for users: no package entry point maps this file,
 * so it is out of a user's reach, and the layering rule lets other layers import it like the index
 * (docs/architecture.md).
 */

export { isProcessAlive } from "./assets/lock.js";
export { REAL_NODE_BINARIES } from "./control-plane/node-host.js";
export { baseImage, importImage } from "./control-plane/node-images.js";
