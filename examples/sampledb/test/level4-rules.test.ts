import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promtool } from "kubeloop/testing/servers";
import { describe, expect, it } from "vitest";
import { rulesFile } from "../src/alerts.ts";
import { dashboard } from "../src/dashboard.ts";

// Level 4, the shipped files, without a cluster: the alerting rules are what src/alerts.ts
// generates and pass promtool's checks and unit tests (each alert fires when it should, not
// before); the dashboard is what src/dashboard.ts generates. level4-insights.test.ts fires the
// alerts on real pods.

const configDir = join(import.meta.dirname, "..", "config");
const rulesDir = join(configDir, "prometheus");

describe("SampleDB level 4: the shipped alerting rules and dashboard", () => {
  it("ships alerting rules generated from src/alerts.ts that pass promtool's checks and unit tests", () => {
    expect(readFileSync(join(rulesDir, "sampledb-rules.yaml"), "utf8")).toBe(rulesFile());
    const check = promtool(["check", "rules", "sampledb-rules.yaml"], { cwd: rulesDir });
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toContain("SUCCESS: 7 rules found");
    const test = promtool(["test", "rules", "sampledb-rules.test.yaml"], { cwd: rulesDir });
    expect(test.code, test.stdout + test.stderr).toBe(0);
  });

  it("ships a dashboard generated from src/dashboard.ts", () => {
    // Compared as JSON: the committed file is formatted by biome.
    const committed = readFileSync(join(configDir, "grafana", "sampledb-dashboard.json"), "utf8");
    expect(JSON.parse(committed)).toEqual(dashboard());
  });
});
