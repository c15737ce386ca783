// Imported first by the modules that load undici: on a Node older than kubeloop supports, importing
// kubeloop fails here, saying which Node it needs, instead of inside undici.
import { requireSupportedNode } from "../util/internal.js";

requireSupportedNode();
