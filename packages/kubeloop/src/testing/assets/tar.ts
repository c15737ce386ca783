import { gunzipSync, gzipSync } from "node:zlib";
import { AssetsError } from "./errors.js";

/**
 * Just enough tar for release archives: reading the regular files of a `.tar.gz` (ustar, GNU and
 * pax headers, as upstream's `tar -czf` and Go's archive/tar write them), and writing the GNU
 * format GNU tar writes by default, which is how controller-tools packs envtest tarballs
 * (`tar -czvf envtest-….tar.gz /controller-tools/envtest`, hack/envtest/linux/Dockerfile).
 */

const BLOCK = 512;
/** GNU tar's default record: 20 blocks; archives are padded to a whole record. */
const RECORD = 20 * BLOCK;

export interface TarEntry {
  /** The path in the archive, as stored (`controller-tools/envtest/etcd`). */
  name: string;
  /** `file` or `directory`; links and devices are skipped by the reader. */
  type: "file" | "directory";
  mode: number;
  data: Buffer;
}

/** The regular files and folders of a gzip-compressed tar archive. */
export function readTarGz(archive: Buffer, what: string): TarEntry[] {
  let tar: Buffer;
  try {
    tar = gunzipSync(archive);
  } catch (error) {
    throw new AssetsError(`${what} is not a gzip archive: ${(error as Error).message}`);
  }
  const entries: TarEntry[] = [];
  let longName: string | undefined;
  for (let offset = 0; offset + BLOCK <= tar.length; ) {
    const header = tar.subarray(offset, offset + BLOCK);
    if (header.every((byte) => byte === 0)) break;
    const size = octal(header.subarray(124, 136));
    const type = String.fromCharCode(header[156] ?? 0);
    const data = tar.subarray(offset + BLOCK, offset + BLOCK + size);
    offset += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
    if (type === "L") {
      longName = cString(data);
      continue;
    }
    if (type === "x") {
      longName = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(data.toString("utf8"))?.[1] ?? longName;
      continue;
    }
    const prefix =
      header.subarray(257, 263).toString("latin1") === "ustar\0" ? cString(header.subarray(345, 500)) : "";
    const name =
      longName ??
      (prefix ? `${prefix}/${cString(header.subarray(0, 100))}` : cString(header.subarray(0, 100)));
    longName = undefined;
    const mode = octal(header.subarray(100, 108));
    if (type === "0" || type === "\0") entries.push({ name, type: "file", mode, data: Buffer.from(data) });
    else if (type === "5") entries.push({ name, type: "directory", mode, data: Buffer.alloc(0) });
  }
  return entries;
}

/** The file at `path` in an archive (a leading `./` is ignored), or an error naming what is there. */
export function fileIn(entries: TarEntry[], path: string, what: string): TarEntry {
  const clean = (name: string) => name.replace(/^\.\//, "");
  const found = entries.find((entry) => entry.type === "file" && clean(entry.name) === clean(path));
  if (!found) {
    const names = entries.map((entry) => entry.name).slice(0, 20);
    throw new AssetsError(`${what} has no ${path}; it holds ${names.join(", ") || "nothing"}`);
  }
  return found;
}

export interface TarWriteOptions {
  /** Modification time of every entry, in seconds since the epoch. */
  mtime: number;
}

/**
 * A GNU-format tar archive, gzip-compressed, as `tar -czf` makes it: entries owned by root
 * (uid/gid 0, `root`/`root`), the `ustar  \0` magic, and the end padded to a 10 KiB record.
 */
export function writeTarGz(entries: TarEntry[], options: TarWriteOptions): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    if (Buffer.byteLength(entry.name) > 100) throw new AssetsError(`tar entry name too long: ${entry.name}`);
    parts.push(header(entry, options.mtime));
    if (entry.type === "file") {
      parts.push(entry.data);
      const rest = entry.data.length % BLOCK;
      if (rest) parts.push(Buffer.alloc(BLOCK - rest));
    }
  }
  parts.push(Buffer.alloc(2 * BLOCK));
  const length = parts.reduce((sum, part) => sum + part.length, 0);
  if (length % RECORD) parts.push(Buffer.alloc(RECORD - (length % RECORD)));
  return gzipSync(Buffer.concat(parts));
}

function header(entry: TarEntry, mtime: number): Buffer {
  const block = Buffer.alloc(BLOCK);
  block.write(entry.name, 0, 100, "utf8");
  block.write(field(entry.mode & 0o7777, 7), 100, "latin1");
  block.write(field(0, 7), 108, "latin1");
  block.write(field(0, 7), 116, "latin1");
  block.write(field(entry.type === "file" ? entry.data.length : 0, 11), 124, "latin1");
  block.write(field(mtime, 11), 136, "latin1");
  block.write(" ".repeat(8), 148, "latin1");
  block.write(entry.type === "file" ? "0" : "5", 156, "latin1");
  block.write("ustar  \0", 257, "latin1");
  block.write("root", 265, "latin1");
  block.write("root", 297, "latin1");
  const sum = block.reduce((total, byte) => total + byte, 0);
  block.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "latin1");
  return block;
}

/** An octal number of `digits` digits and a NUL, as GNU tar writes numeric fields. */
function field(value: number, digits: number): string {
  return `${value.toString(8).padStart(digits, "0")}\0`;
}

function octal(bytes: Buffer): number {
  const text = cString(bytes).trim();
  return text ? Number.parseInt(text, 8) : 0;
}

function cString(bytes: Buffer): string {
  const end = bytes.indexOf(0);
  return bytes.subarray(0, end === -1 ? bytes.length : end).toString("utf8");
}
