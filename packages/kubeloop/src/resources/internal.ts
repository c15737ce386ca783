/**
 * `resources/`'s names for other kubeloop layers, not for users: no package entry point maps this file,
 * so it is out of a user's reach, and the layering rule lets other layers import it like the index
 * (docs/architecture.md).
 */

export { isIP } from "./cel/libraries.js";
export { checkRules, type RuleProblem } from "./cel/rules.js";
export { hasValidationRules, prepareRules, UnsupportedRule, validateRules } from "./cel/validator.js";
export { microTime } from "./events.js";
export { groupOf, versionOf } from "./identify.js";
