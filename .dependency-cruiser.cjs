// The layering of packages/kubeloop/src as a rule (docs/architecture.md). `npm run lint` runs it.
// A layer imports only layers of a lower rank, and from another folder only its index.ts.

/** Bottom to top; layers of the same rank may not import each other. */
const LAYERS = [
  ["util"],
  ["queue", "client"],
  ["k8s"],
  ["resources", "cache"],
  ["webhook", "controller"],
  ["manager"],
  ["testing"],
  ["cli"],
];

const SRC = "^packages/kubeloop/src/";
/**
 * Tests are consumers of their layer, like examples: they may start a ControlPlane or a Manager and reach
 * the module they test. They are left out of the cruise.
 */
const TESTS = "^packages/kubeloop/src/.*\\.test\\.ts$";

/** Code that uses kubeloop the way a user does. */
const CONSUMERS = "^(examples|bench|docs|scripts)/";
/** `kubeloop`, `kubeloop/client`, …: the `exports` of packages/kubeloop/package.json. */
const packageExports = require("./packages/kubeloop/package.json").exports;
const ENTRY_POINTS = Object.keys(packageExports).map((subpath) =>
  subpath === "." ? "kubeloop" : `kubeloop/${subpath.slice(2)}`,
);
/** The files those resolve to (`dist/index.js`, …; `.d.ts` for types), as regular expressions. */
const ENTRY_FILES = Object.values(packageExports)
  .flatMap((target) => (typeof target === "string" ? [target] : Object.values(target)))
  .map((file) => file.replace(/^\.\//, "").replaceAll(".", "\\."));

/**
 * testing/ is one layer with entry points of its own (`kubeloop/testing/assets`, …): its folders in
 * their order, bottom to top. assets/ (the binaries) needs nothing else of testing/; the core (the
 * control plane, the memory API server and testing/'s own files) builds on assets/; cluster/,
 * faults/ and servers/ build on the core and not on each other.
 */
const TESTING = `${SRC}testing/`;
const TESTING_TOPS = ["cluster", "faults", "servers"];
const TESTING_ENTRIES = ["assets", ...TESTING_TOPS];
const testingOrder = [
  {
    name: "testing-order",
    comment: "testing/assets/ (the binaries) imports nothing else of testing/",
    severity: "error",
    from: { path: `${TESTING}assets/` },
    to: { path: TESTING, pathNot: `${TESTING}assets/` },
  },
  {
    name: "testing-order",
    comment: `testing/'s core (its own files, control-plane/, memory/) imports no ${TESTING_TOPS.join("/, ")}/: they build on it`,
    severity: "error",
    from: { path: TESTING, pathNot: [`${TESTING}(${TESTING_ENTRIES.join("|")})/`, `${TESTING}moved\\.ts$`] },
    to: { path: `${TESTING}(${TESTING_TOPS.join("|")})/` },
  },
  ...TESTING_TOPS.map((top) => ({
    name: "testing-order",
    comment: `testing/${top}/ imports neither another of ${TESTING_TOPS.join("/, ")}/ nor what the core keeps for its users' old imports (moved.ts)`,
    severity: "error",
    from: { path: `${TESTING}${top}/` },
    to: {
      path: [
        `${TESTING}(${TESTING_TOPS.filter((t) => t !== top).join("|")})/`,
        `${TESTING}(index|moved)\\.ts$`,
      ],
    },
  })),
];

const rank = new Map(LAYERS.flatMap((names, index) => names.map((name) => [name, index])));
const layerOrder = [...rank].map(([layer, own]) => {
  const notBelow = [...rank].filter(([other, r]) => other !== layer && r >= own).map(([other]) => other);
  return {
    name: "layer-order",
    comment: `${layer}/ (rank ${own}) imports only layers below it; not ${notBelow.join(", ")} nor the root index.ts`,
    severity: "error",
    from: { path: `${SRC}${layer}/` },
    to: { path: [`${SRC}(${notBelow.join("|")})/`, `${SRC}index\\.ts$`] },
  };
});

module.exports = {
  forbidden: [
    ...layerOrder,
    ...testingOrder,
    {
      name: "no-circular",
      comment:
        "modules do not import each other in a circle (type-only imports included): a circle has no order to read or load it in",
      severity: "error",
      from: { path: SRC },
      to: { circular: true },
    },
    {
      name: "unknown-layer",
      comment: "every folder of packages/kubeloop/src is a layer listed in .dependency-cruiser.cjs",
      severity: "error",
      from: { path: `${SRC}[^/]+/` },
      to: { path: `${SRC}(?!(${[...rank.keys()].join("|")})/)[^/]+/` },
    },
    {
      name: "index-only",
      comment:
        "from outside a layer, import only its index.ts (what it chose to export) or its internal.ts (names for other layers, not users); testing/'s entry points (assets/, cluster/, faults/, servers/) have their own",
      severity: "error",
      from: { path: `${SRC}([^/]+)/` },
      to: {
        path: `${SRC}[^/]+/.`,
        pathNot: [
          `${SRC}$1/`,
          `${SRC}[^/]+/(index|internal)\\.ts$`,
          `${TESTING}(${TESTING_ENTRIES.join("|")})/(index|internal)\\.ts$`,
        ],
      },
    },
    {
      name: "index-only",
      comment: "the root entry point re-exports layers' index.ts only",
      severity: "error",
      from: { path: `${SRC}index\\.ts$` },
      to: { path: `${SRC}[^/]+/.`, pathNot: `${SRC}[^/]+/index\\.ts$` },
    },
    {
      name: "public-api-only",
      comment:
        "examples, benchmarks, docs and scripts import kubeloop like a user: `kubeloop` or `kubeloop/<layer>`",
      severity: "error",
      from: { path: CONSUMERS },
      // By path: kubeloop's sources, or a built file that is not an entry point's index.js.
      to: { path: "^packages/kubeloop/", pathNot: `^packages/kubeloop/(${ENTRY_FILES.join("|")})$` },
    },
    {
      name: "public-api-only",
      comment: `kubeloop's entry points are the exports of its package.json: ${ENTRY_POINTS.join(", ")}`,
      severity: "error",
      from: { path: CONSUMERS },
      to: { path: "^kubeloop(/|$)", pathNot: `^(${ENTRY_POINTS.join("|")})$` },
    },
  ],
  options: {
    // Type-only imports count: a layer that names a higher layer's type depends on it too.
    // (TypeScript 7 has no compiler API yet: scripts/lint-layers.mjs gives dependency-cruiser TypeScript 6.)
    tsPreCompilationDeps: true,
    doNotFollow: { path: ["node_modules", "/dist/"] },
    exclude: { path: [TESTS, "^examples/[^/]+/dist/", "\\.vitepress/(cache|dist)", "/\\.kubeloop/"] },
    enhancedResolveOptions: { extensions: [".ts", ".js", ".mjs", ".mts"] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
