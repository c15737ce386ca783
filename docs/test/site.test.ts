import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

// The built book in a real browser: Debian's Chromium, headless, through playwright-core. Every
// page of the sidebar renders, every link between pages resolves (links into the repository point
// at files that exist), and the local search finds a page.

const repository = join(import.meta.dirname, "../..");
const CHROMIUM = "/usr/bin/chromium";
const profile = mkdtempSync(join(tmpdir(), "kubeloop-chromium-"));
let preview: ChildProcess | undefined;
let browser: BrowserContext | undefined;
let base = "";

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (typeof address !== "object" || !address) throw new Error("no port");
  return address.port;
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} not found: install Debian's chromium (npm test does, as root: apt-get install chromium)`,
    );
  }
  const build = spawnSync("npm", ["run", "build", "-w", "docs"], { cwd: repository, encoding: "utf8" });
  if (build.status !== 0) throw new Error(`npm run build -w docs failed:\n${build.stdout}${build.stderr}`);
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  preview = spawn(
    join(repository, "node_modules/.bin/vitepress"),
    ["preview", "docs", "--host", "127.0.0.1", "--port", String(port)],
    { cwd: repository, stdio: "ignore" },
  );
  await vi.waitFor(
    async () => {
      const response = await fetch(base);
      if (response.status !== 200) throw new Error(`vitepress preview answers ${response.status}`);
    },
    { timeout: 30_000, interval: 100 },
  );
  // A fresh profile (--user-data-dir), given the way playwright takes it.
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
});

afterAll(async () => {
  await browser?.close();
  preview?.kill();
  rmSync(profile, { recursive: true, force: true });
});

describe("the built book", () => {
  it("renders every page of the sidebar, and every link between pages resolves", async () => {
    const page = await (browser as BrowserContext).newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    await page.goto(`${base}/quick-start.html`);
    const pages = (
      await page.$$eval(".VPSidebar a.VPLink", (links) => links.map((a) => a.getAttribute("href") ?? ""))
    ).map((href) => new URL(href, base).href);
    expect(pages.length).toBeGreaterThan(10);
    const links = new Set<string>();
    const repositoryPaths = new Set<string>();
    for (const url of pages) {
      const response = await page.goto(url);
      expect(response?.status(), url).toBe(200);
      await expect
        .poll(() => page.locator("main h1").first().textContent(), { timeout: 10_000 })
        .toBeTruthy();
      for (const [relativeHref, repositoryPath] of await page.$$eval("main a[href]", (anchors) =>
        anchors.map((a) => [a.getAttribute("href") ?? "", a.getAttribute("data-repository-path")] as const),
      )) {
        const href = new URL(relativeHref, page.url()).href;
        if (repositoryPath) repositoryPaths.add(repositoryPath);
        else if (href.startsWith(base)) links.add(href.split("#")[0] ?? href);
      }
    }
    expect(errors).toEqual([]);
    expect(links.size).toBeGreaterThan(20);
    expect(repositoryPaths.size).toBeGreaterThan(5);
    const broken: string[] = [];
    for (const link of links) {
      const response = await page.request.get(link);
      if (response.status() !== 200) broken.push(`${link}: ${response.status()}`);
    }
    expect(broken).toEqual([]);
    expect([...repositoryPaths].filter((path) => !existsSync(join(repository, path)))).toEqual([]);
    await page.close();
  });

  it("finds the tutorial with the search", async () => {
    const page = await (browser as BrowserContext).newPage();
    await page.goto(`${base}/`);
    await page.locator(".VPNavBarSearch button").first().click();
    await page.locator("#localsearch-input").fill("CronJob");
    const results = page.locator(".results .result");
    await expect.poll(() => results.count(), { timeout: 10_000 }).toBeGreaterThan(0);
    const hrefs = await results.evaluateAll((items) => items.map((item) => item.getAttribute("href")));
    expect(hrefs.some((href) => href?.includes("/tutorial/"))).toBe(true);
    await page.close();
  });
});
