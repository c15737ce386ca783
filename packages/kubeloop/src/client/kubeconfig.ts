import { existsSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve, sep } from "node:path";
import { ConfigError } from "./errors.js";

/**
 * Reading kubeconfig files the way client-go's `clientcmd` does: several files merge (the first file
 * that names a cluster, user or context wins it; the first `current-context` wins), and each file
 * path inside an entry (certificates, keys, `tokenFile`, an exec `command` with a `/`) is relative
 * to the folder of the file that holds the entry. Only the selected context's entries are looked at
 * closely; `config.ts` turns them into a connection.
 */

/** One entry of a kubeconfig's `clusters`, `users` or `contexts`, with the folder its paths are relative to. */
export interface KubeconfigEntry {
  name: string;
  fields: Record<string, unknown>;
  /** The folder of the file that defines the entry (`undefined` for text given directly). */
  dir: string | undefined;
}

export interface MergedKubeconfig {
  clusters: Map<string, KubeconfigEntry>;
  users: Map<string, KubeconfigEntry>;
  contexts: Map<string, KubeconfigEntry>;
  currentContext: string | undefined;
}

export interface KubeconfigSource {
  text: string;
  /** The file the text came from, for relative paths and messages. */
  file?: string;
}

/**
 * Merges kubeconfigs in the order given, as `KUBECONFIG=a:b` does. The YAML parser is loaded here,
 * not at import: an operator in a pod reads its service account, not a kubeconfig.
 */
export async function mergeKubeconfigs(sources: KubeconfigSource[]): Promise<MergedKubeconfig> {
  const { parse } = await import("yaml");
  const merged: MergedKubeconfig = {
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
    currentContext: undefined,
  };
  for (const source of sources) {
    const where = source.file ?? "the kubeconfig text";
    let doc: unknown;
    try {
      doc = parse(source.text);
    } catch (error) {
      throw new ConfigError(
        `Could not read the Kubernetes configuration: ${where} is not valid YAML: ${(error as Error).message}`,
      );
    }
    if (doc === null || doc === undefined) continue; // an empty file, which client-go accepts
    const root = record(doc);
    if (!root)
      throw new ConfigError(`Could not read the Kubernetes configuration: ${where} is not a kubeconfig`);
    const dir = source.file ? dirname(resolve(source.file)) : undefined;
    for (const [key, field, map] of [
      ["clusters", "cluster", merged.clusters],
      ["users", "user", merged.users],
      ["contexts", "context", merged.contexts],
    ] as const) {
      const list = root[key];
      if (list === undefined || list === null) continue;
      if (!Array.isArray(list)) throw new ConfigError(`${where}: "${key}" must be a list`);
      list.forEach((item, index) => {
        const entry = record(item);
        const name = entry?.name;
        if (typeof name !== "string" || !name)
          throw new ConfigError(`${where}: ${key}[${index}] has no name`);
        if (map.has(name)) return; // the first file to define a name keeps it
        map.set(name, { name, fields: record(entry?.[field]) ?? {}, dir });
      });
    }
    const current = root["current-context"];
    if (merged.currentContext === undefined && typeof current === "string" && current)
      merged.currentContext = current;
  }
  return merged;
}

/**
 * The kubeconfig files `$KUBECONFIG` names, in order (`:`-separated, `;` on Windows). Like client-go,
 * names of files that do not exist are skipped, but at least one must exist.
 */
export function kubeconfigFiles(value: string): string[] {
  const names = value.split(process.platform === "win32" ? ";" : ":").filter(Boolean);
  const present = [...new Set(names)].filter((name) => existsSync(name));
  if (present.length === 0)
    throw new ConfigError(`KUBECONFIG names ${names.join(", ")}, and none of them exists`);
  return present;
}

export function readKubeconfigFile(file: string): KubeconfigSource {
  try {
    return { text: readFileSync(file, "utf8"), file };
  } catch (error) {
    throw new ConfigError(`Could not read the Kubernetes configuration: ${(error as Error).message}`);
  }
}

/** A path from a kubeconfig entry, relative to the folder of its file. */
export function entryPath(entry: KubeconfigEntry, path: string): string {
  return isAbsolute(path) || !entry.dir ? path : resolve(entry.dir, path);
}

/** An exec plugin's command: resolved against the file's folder only when it is a path (`./bin/x`), as client-go does. */
export function execCommandPath(entry: KubeconfigEntry, command: string): string {
  return command.includes(sep) || command.includes("/") ? entryPath(entry, command) : command;
}

export function record(value: unknown): Record<string, unknown> | undefined {
  return value && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
