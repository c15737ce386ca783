// The kubeloop book: VitePress over docs/, with the API reference TypeDoc writes to docs/reference/api.
import { existsSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { defineConfig } from "vitepress";

const docs = resolve(import.meta.dirname, "..");
const repository = resolve(docs, "..");

export default defineConfig({
  title: "kubeloop",
  description: "The Kubernetes operator framework for TypeScript",
  cleanUrls: false,
  srcExclude: ["**/node_modules/**", "package.json"],
  markdown: {
    config(md) {
      // Links from the book to the repository's code (`../examples/nginx`, `../packages/…`) leave the
      // site: they keep their path, marked so the browser test checks the file exists instead.
      const render =
        md.renderer.rules.link_open ??
        ((tokens, i, options, _env, self) => self.renderToken(tokens, i, options));
      md.renderer.rules.link_open = (tokens, i, options, env, self) => {
        const token = tokens[i];
        const href = token?.attrGet("href");
        const page =
          (env as { realPath?: string; path?: string }).realPath ?? (env as { path?: string }).path;
        if (token && href && !/^[a-z]+:|^#|^\//.test(href) && page) {
          const target = resolve(dirname(page), href.split("#")[0] ?? "");
          if (!target.startsWith(`${docs}/`) && target.startsWith(repository) && existsSync(target)) {
            token.attrSet("data-repository-path", relative(repository, target));
          }
        }
        return render(tokens, i, options, env, self);
      };
    },
  },
  // The repository links above are not pages of the site.
  ignoreDeadLinks: [/^(\.\.\/)+(examples|packages|bench|scripts|README|docs\/design)/, /^\.\/(\.\.\/)+/],
  themeConfig: {
    search: { provider: "local" },
    nav: [
      { text: "Quick start", link: "/quick-start" },
      { text: "Tutorial", link: "/tutorial/" },
      { text: "Concepts", link: "/concepts" },
      { text: "API", link: "/reference/api/" },
    ],
    sidebar: [
      {
        text: "Start",
        items: [
          { text: "Quick start", link: "/quick-start" },
          { text: "Tutorial: a CronJob operator", link: "/tutorial/" },
          { text: "The developer workflow", link: "/workflow" },
        ],
      },
      {
        text: "Concepts",
        items: [
          { text: "Overview", link: "/concepts" },
          { text: "Architecture: layers and API", link: "/architecture" },
          { text: "Kubernetes types", link: "/types" },
          { text: "Dependents: children declared", link: "/dependents" },
          { text: "Testing", link: "/testing" },
          { text: "Observability", link: "/observability" },
          { text: "Leader election and sharding", link: "/scale-out" },
          { text: "Many clusters (Karmada)", link: "/multi-cluster" },
          { text: "Reliability", link: "/reliability" },
          { text: "Compatibility", link: "/compatibility" },
          { text: "Shipping", link: "/shipping" },
          { text: "Releases and upgrades", link: "/releases" },
          { text: "Performance", link: "/performance" },
          { text: "The control plane for tests", link: "/control-plane" },
          { text: "Maturity", link: "/maturity" },
        ],
      },
      {
        text: "Migrating",
        items: [
          { text: "From controller-runtime", link: "/migrating/controller-runtime" },
          { text: "From kopf", link: "/migrating/kopf" },
          { text: "From Pepr", link: "/migrating/pepr" },
        ],
      },
      { text: "API reference", link: "/reference/api/" },
    ],
  },
});
