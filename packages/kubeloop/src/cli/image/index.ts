/**
 * `kubeloop build`: operator images without Docker (what ko is for Go and jib for Java). See
 * docs/shipping.md for how to build, push and deploy one, and each file for how its part is made:
 * tar.ts and oci.ts (reproducible layers and OCI JSON), layout.ts (the OCI layout tar), app.ts (the
 * bundled operator), runtime.ts (Node), base.ts (Debian's libraries), layers.ts (the shared,
 * cached layers), build.ts (the image), push.ts (a registry), sbom.ts (SPDX), licenses.ts (the licences of
 * the bundled packages).
 */
export type { AppBuild, BundledPackage, ExternalPackage } from "./app.js";
export { type BuildImageOptions, type BuiltImage, buildImage, DEFAULT_PLATFORMS } from "./build.js";
export { buildBundleImage } from "./bundle-image.js";
export { buildCommand } from "./command.js";
export { type Image, layoutTar, readLayout } from "./layout.js";
export { LICENSES_FILE } from "./licenses.js";
export type { Platform } from "./oci.js";
export { parseReference, pushImage } from "./push.js";
export { spdxDocument } from "./sbom.js";
