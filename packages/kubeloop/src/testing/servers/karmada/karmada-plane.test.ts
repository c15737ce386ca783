import { describe, expect, it } from "vitest";
import { ControlPlaneError } from "../../errors.js";
import { KarmadaPlane } from "./karmada-plane.js";

// The plane's bad input is refused before anything starts; starting it is the nginx example's
// karmada.test.ts and the CLI's cluster-karmada.test.ts.

describe("KarmadaPlane options", () => {
  const refused = (members: { name: string; region: string }[]) => () => new KarmadaPlane({ members });

  it("needs members that are DNS labels, once each, each with a region", () => {
    expect(refused([])).toThrow("a Karmada plane needs at least one member");
    expect(refused([{ name: "Shanghai", region: "cn-east" }])).toThrow(ControlPlaneError);
    expect(refused([{ name: "Shanghai", region: "cn-east" }])).toThrow(/is not a DNS label/);
    expect(
      refused([
        { name: "a", region: "x" },
        { name: "a", region: "y" },
      ]),
    ).toThrow('member name "a" is given twice');
    expect(refused([{ name: "a", region: " " }])).toThrow("member a has no region");
  });

  it("names its members and refuses an unknown one", async () => {
    await using plane = new KarmadaPlane({
      members: [{ name: "east", region: "cn-east", profile: "cluster" }],
    });
    expect(plane.member("east")).toMatchObject({ name: "east", region: "cn-east" });
    expect(plane.member("east").plane.profile).toBe("cluster");
    expect(() => plane.member("west")).toThrow("no member west (members: east)");
  });
});
