// `npm run lint:layers`: dependency-cruiser with the rules of .dependency-cruiser.cjs (docs/architecture.md).
// dependency-cruiser reads TypeScript with the TypeScript compiler's API, which TypeScript 7 (the
// workspace's) does not have yet: its imports of `typescript` get TypeScript 6 (the `typescript-6`
// devDependency, an npm alias) instead. Arguments are dependency-cruiser's.
import { registerHooks } from "node:module";
import { join } from "node:path";

const depcruise = join(import.meta.dirname, "../node_modules/dependency-cruiser/bin/dependency-cruiser.mjs");

registerHooks({
  resolve(specifier, context, nextResolve) {
    const fromCruiser = context.parentURL?.includes("/node_modules/dependency-cruiser/");
    if (fromCruiser && (specifier === "typescript" || specifier.startsWith("typescript/"))) {
      return nextResolve(specifier.replace(/^typescript/, "typescript-6"), context);
    }
    return nextResolve(specifier, context);
  },
});

process.argv = [process.argv[0] ?? "node", depcruise, ...process.argv.slice(2)];
await import(depcruise);
