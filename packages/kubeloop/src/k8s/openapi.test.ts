import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlane, stopPlane } from "../../test/helpers.js";
import { capture, captureFile, serialize } from "../cli/typegen/capture.js";
import type { Client } from "../client/index.js";
import { KUBERNETES_VERSION } from "../testing/assets/index.js";
import type { ControlPlane } from "../testing/control-plane.js";

let plane: ControlPlane;
let client: Client;
beforeAll(async () => ({ plane, client } = await startPlane({ profile: "apiserver" })));
afterAll(() => stopPlane(plane, client));

const minor = KUBERNETES_VERSION.split(".").slice(0, 2).join(".");

describe(`the committed OpenAPI capture of Kubernetes ${minor}`, () => {
  it("is what a live kube-apiserver serves: every schema, list key and served kind", async () => {
    const committed = readFileSync(captureFile(minor), "utf8");
    const live = serialize(await capture(client));
    // Line by line first: a drift names the schema or resource that changed.
    const committedLines = committed.split("\n");
    const changed = live.split("\n").filter((line) => !committedLines.includes(line));
    expect(changed.map((line) => line.slice(0, 160))).toEqual([]);
    expect(live).toBe(committed);
  });
});
