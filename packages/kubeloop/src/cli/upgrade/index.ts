/**
 * `kubeloop upgrade`: a newer kubeloop's scaffold merged into a project (command.ts), from the two
 * scaffolds made again (render.ts) and a 3-way merge of each file (merge.ts).
 */
export { upgradeCommand } from "./command.js";
