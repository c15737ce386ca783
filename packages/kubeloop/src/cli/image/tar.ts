/**
 * Tar archives, written reproducibly and read simply. Image layers and the OCI layout are tars; a
 * layer's digest is the hash of its bytes, so the same files must give the same bytes: entries
 * sorted by path, every parent folder present, mtime {@link EPOCH}, numeric owners only (no user or
 * group names), modes as given. Paths that do not fit ustar's fields get a PAX `path`/`linkpath`
 * record (nothing else, so no access times or extended attributes slip in).
 */

/** Every entry's mtime: the Unix epoch, so a rebuild of the same files gives the same layer. */
export const EPOCH = 0;

export interface TarEntry {
  /** Relative, `/`-separated (a leading `/` or `./` is dropped). */
  path: string;
  type: "file" | "dir" | "symlink";
  /** Permission bits, e.g. 0o755 (setuid/sticky bits included: 0o1777 for /tmp). */
  mode: number;
  uid?: number;
  gid?: number;
  data?: Uint8Array;
  /** A symlink's target. */
  target?: string;
}

const BLOCK = 512;

/** The tar of `entries`: sorted, with missing parent folders added (0755, root), ending in two zero blocks. */
export function writeTar(entries: readonly TarEntry[]): Buffer {
  const byPath = new Map<string, TarEntry>();
  for (const entry of entries) {
    const path = normalize(entry.path);
    if (!path) continue;
    const previous = byPath.get(path);
    if (previous && !(previous.type === "dir" && entry.type === "dir")) {
      throw new Error(`two entries for ${path} in one layer`);
    }
    byPath.set(path, { ...entry, path });
    for (let parent = parentOf(path); parent; parent = parentOf(parent)) {
      if (!byPath.has(parent)) byPath.set(parent, { path: parent, type: "dir", mode: 0o755 });
    }
  }
  const sorted = [...byPath.values()].sort((a, b) => compare(a.path, b.path));
  const chunks: Buffer[] = [];
  for (const entry of sorted) chunks.push(...entryBlocks(entry));
  chunks.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(chunks);
}

/** The entries of a tar (ustar, GNU long names and PAX paths), folders and symlinks included. */
export function readTar(tar: Uint8Array): TarEntry[] {
  const buf = Buffer.from(tar.buffer, tar.byteOffset, tar.byteLength);
  const entries: TarEntry[] = [];
  let longPath: string | undefined;
  let longLink: string | undefined;
  for (let offset = 0; offset + BLOCK <= buf.length; ) {
    const header = buf.subarray(offset, offset + BLOCK);
    if (header.every((byte) => byte === 0)) break;
    const size = octal(header, 124, 12);
    const kind = String.fromCharCode(header[156] ?? 0);
    const data = buf.subarray(offset + BLOCK, offset + BLOCK + size);
    offset += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
    if (kind === "x") {
      const pax = parsePax(data);
      longPath = pax.get("path") ?? longPath;
      longLink = pax.get("linkpath") ?? longLink;
      continue;
    }
    if (kind === "L" || kind === "K") {
      const value = cString(data, 0, data.length);
      if (kind === "L") longPath = value;
      else longLink = value;
      continue;
    }
    if (kind === "g") continue;
    const prefix = cString(header, 345, 155);
    const name = cString(header, 0, 100);
    const path = normalize(longPath ?? (prefix ? `${prefix}/${name}` : name));
    const target = longLink ?? cString(header, 157, 100);
    longPath = longLink = undefined;
    const common = {
      path,
      mode: octal(header, 100, 8) & 0o7777,
      uid: octal(header, 108, 8),
      gid: octal(header, 116, 8),
    };
    if (kind === "5") entries.push({ ...common, type: "dir" });
    else if (kind === "2") entries.push({ ...common, type: "symlink", target });
    else if (kind === "1") entries.push({ ...common, type: "file", data: hardLinkData(entries, target) });
    else if (kind === "0" || kind === "\0")
      entries.push({ ...common, type: "file", data: Uint8Array.from(data) });
  }
  return entries;
}

function hardLinkData(entries: readonly TarEntry[], target: string): Uint8Array {
  const path = normalize(target);
  const found = entries.find((entry) => entry.path === path);
  if (!found?.data) throw new Error(`hard link to ${target}, which is not an earlier file of the archive`);
  return found.data;
}

function entryBlocks(entry: TarEntry): Buffer[] {
  const name = entry.type === "dir" ? `${entry.path}/` : entry.path;
  const data = entry.type === "file" ? Buffer.from(entry.data ?? new Uint8Array()) : Buffer.alloc(0);
  const target = entry.target ?? "";
  const split = splitName(name);
  const pax: [string, string][] = [];
  if (!split) pax.push(["path", name]);
  if (Buffer.byteLength(target) > 100) pax.push(["linkpath", target]);
  const blocks: Buffer[] = [];
  if (pax.length > 0) {
    const body = Buffer.from(pax.map(([key, value]) => paxRecord(key, value)).join(""));
    blocks.push(header({ name: "PaxHeaders/entry", size: body.length, kind: "x", mode: 0o644 }), pad(body));
  }
  const kind = entry.type === "dir" ? "5" : entry.type === "symlink" ? "2" : "0";
  blocks.push(
    header({
      name: split?.name ?? name.slice(0, 100),
      prefix: split?.prefix ?? "",
      size: data.length,
      kind,
      mode: entry.mode,
      uid: entry.uid ?? 0,
      gid: entry.gid ?? 0,
      linkname: pax.some(([key]) => key === "linkpath") ? "" : target,
    }),
  );
  if (data.length > 0) blocks.push(pad(data));
  return blocks;
}

interface Header {
  name: string;
  prefix?: string;
  size: number;
  kind: string;
  mode: number;
  uid?: number;
  gid?: number;
  linkname?: string;
}

function header(h: Header): Buffer {
  const block = Buffer.alloc(BLOCK);
  block.write(h.name, 0, 100, "utf8");
  block.write(octalField(h.mode, 8), 100, "ascii");
  block.write(octalField(h.uid ?? 0, 8), 108, "ascii");
  block.write(octalField(h.gid ?? 0, 8), 116, "ascii");
  block.write(octalField(h.size, 12), 124, "ascii");
  block.write(octalField(EPOCH, 12), 136, "ascii");
  block.write(h.kind, 156, "ascii");
  block.write(h.linkname ?? "", 157, 100, "utf8");
  block.write("ustar\u000000", 257, "ascii");
  block.write(h.prefix ?? "", 345, 155, "utf8");
  block.fill(" ", 148, 156);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, "0")}\u0000 `, 148, "ascii");
  return block;
}

/** ustar's name (≤ 100 bytes) and prefix (≤ 155), split at a `/`; undefined when no split fits. */
function splitName(name: string): { name: string; prefix: string } | undefined {
  if (Buffer.byteLength(name) <= 100) return { name, prefix: "" };
  for (let i = name.indexOf("/"); i > 0; i = name.indexOf("/", i + 1)) {
    const prefix = name.slice(0, i);
    const rest = name.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(rest) <= 100 && rest)
      return { name: rest, prefix };
  }
  return undefined;
}

/** A PAX record: "<length> key=value\n", where the length counts itself. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let length = Buffer.byteLength(body) + 1;
  while (String(length).length + Buffer.byteLength(body) !== length) length++;
  return `${length}${body}`;
}

function parsePax(data: Buffer): Map<string, string> {
  const records = new Map<string, string>();
  for (let offset = 0; offset < data.length; ) {
    const space = data.indexOf(0x20, offset);
    if (space < 0) break;
    const length = Number(data.toString("ascii", offset, space));
    if (!length) break;
    const record = data.toString("utf8", space + 1, offset + length - 1);
    const eq = record.indexOf("=");
    records.set(record.slice(0, eq), record.slice(eq + 1));
    offset += length;
  }
  return records;
}

function octalField(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, "0")}\u0000`;
}

function octal(block: Buffer, offset: number, width: number): number {
  const text = cString(block, offset, width).trim();
  return text ? Number.parseInt(text, 8) : 0;
}

function cString(block: Buffer, offset: number, width: number): string {
  const end = block.indexOf(0, offset);
  return block.toString("utf8", offset, end < 0 || end > offset + width ? offset + width : end);
}

function pad(data: Buffer): Buffer {
  const rest = data.length % BLOCK;
  return rest === 0 ? data : Buffer.concat([data, Buffer.alloc(BLOCK - rest)]);
}

function normalize(path: string): string {
  return path.replace(/^(\.?\/)+/, "").replace(/\/+$/, "");
}

function parentOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? "" : path.slice(0, slash);
}

/** Byte order, so that the order does not depend on a locale. */
function compare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
