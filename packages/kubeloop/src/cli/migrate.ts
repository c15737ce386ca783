import { parseArgs } from "node:util";
import { migrateStorageVersion, StorageMigrationError } from "../resources/index.js";
import { CliError } from "./errors.js";
import { requireCluster } from "./target.js";

/**
 * `kubeloop migrate <crd> [--retire VERSION]…`: every stored object of a CRD rewritten in its
 * storage version, `status.storedVersions` trimmed to it, then each retired version set
 * `served: false` (see resources/storage-migration.ts). Safe to rerun; `--continue` resumes from
 * the token a stopped run printed.
 */

const USAGE = `Usage:
  kubeloop migrate <crd-name> [--retire VERSION]... [--page-size N] [--continue TOKEN]

  Rewrites every object of the CRD in its storage version, trims status.storedVersions,
  then stops serving each --retire version. Refuses a version that does not exist or is
  the storage version, and changes nothing then.

  <crd-name>       the CRD's full name, <plural>.<group> (e.g. myapps.apps.example.com)
  --retire V       a version to stop serving once no object is stored in it (repeatable)
  --page-size N    objects per list page (default 500)
  --continue T     resume a stopped run from the token it printed`;

export async function migrateCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      retire: { type: "string", multiple: true, default: [] },
      "page-size": { type: "string" },
      continue: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const [crd, ...extra] = positionals;
  if (!crd || extra.length > 0) throw new CliError(`give exactly one CRD name\n\n${USAGE}`);
  const pageSize = values["page-size"] === undefined ? undefined : Number(values["page-size"]);
  if (pageSize !== undefined && !(Number.isInteger(pageSize) && pageSize > 0))
    throw new CliError(`--page-size must be a whole number > 0, got "${values["page-size"]}"`);
  const target = await requireCluster("migrate the CRD's objects on");
  console.log(`Migrating ${crd} on ${target.description}`);
  try {
    const result = await migrateStorageVersion(target.client, crd, {
      retire: values.retire,
      ...(pageSize ? { pageSize } : {}),
      ...(values.continue ? { continue: values.continue } : {}),
      onProgress: (p) =>
        console.log(
          `  ${p.rewritten} rewritten, ${p.skipped} deleted meanwhile${p.continue ? ` (resume with --continue ${p.continue})` : ""}`,
        ),
    });
    console.log(
      `${result.rewritten} objects stored as ${result.storageVersion}; status.storedVersions ` +
        `[${result.storedVersionsBefore.join(", ")}] → [${result.storedVersions.join(", ")}]` +
        (result.unserved.length ? `; no longer served: ${result.unserved.join(", ")}` : ""),
    );
  } catch (error) {
    if (error instanceof StorageMigrationError) throw new CliError(error.message);
    throw error;
  } finally {
    await target.client.close();
  }
  return 0;
}
