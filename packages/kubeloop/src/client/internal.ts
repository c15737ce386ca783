/**
 * `client/`'s names for other kubeloop layers, not for users: no package entry point maps this file,
 * so it is out of a user's reach, and the layering rule lets other layers import it like the index
 * (docs/architecture.md). The in-memory API server turns its errors into the client's as the transport does.
 */
export { apiErrorFor } from "./errors.js";
export { groupOf, typedKeyOf, typedRef, versionOf } from "./object-ref.js";
