export { type CatalogBundle, type CatalogOptions, publishCatalog, renderCatalog } from "./catalog.js";
export { catalogImage, type OlmPlane, olmAssets, olmImage, pushToPlaneRegistry } from "./images.js";
export { installOlm, type OlmInstall } from "./install.js";
