import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { UsageError } from './flags.ts';

export interface PrivateFileRules {
  /** Prefix of every message, naming where the path came from (`--token-file`, a registry field). */
  label: string;
  /** The uid that must own the file; defaults to the server process's. */
  ownerUid?: number;
  /** Demands this exact mode (e.g. 0o600) instead of merely no group/other permission bits. */
  exactMode?: number;
  /** Larger files are refused without being read. */
  maxBytes?: number;
}

/**
 * Reads a server-private file: a regular file, not a symlink, owned by the server user, with no
 * group or other permission bits. The file is opened without following a symlink and checked on
 * the open descriptor, so it cannot be swapped between the check and the read; O_NONBLOCK keeps a
 * FIFO planted in its place from hanging start-up.
 */
export function readPrivateFile(path: string, rules: PrivateFileRules): string {
  const fail = (problem: string): never => {
    throw new UsageError(`${rules.label}: ${problem}`);
  };
  let descriptor: number;
  try {
    descriptor = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') return fail(`${path} is a symlink`);
    if (code === 'ENOENT' || code === 'ENOTDIR') return fail(`${path} does not exist`);
    return fail(`${path} cannot be opened (${code})`);
  }
  try {
    const stats = fstatSync(descriptor);
    if (!stats.isFile()) fail(`${path} is not a regular file`);
    const ownerUid = rules.ownerUid ?? process.getuid?.();
    if (ownerUid !== undefined && stats.uid !== ownerUid) fail(`${path} is not owned by the server user`);
    const mode = stats.mode & 0o777;
    if (rules.exactMode !== undefined && mode !== rules.exactMode) fail(`mode ${octal(mode)}, must be ${octal(rules.exactMode)}`);
    if ((mode & 0o077) !== 0) fail(`${path} must not be readable or writable by group or others (chmod 600)`);
    if (rules.maxBytes !== undefined && stats.size > rules.maxBytes) fail(`${stats.size} bytes, at most ${rules.maxBytes} allowed`);
    const content = readAll(descriptor, stats.size, rules.maxBytes ?? Number.MAX_SAFE_INTEGER);
    if (content === null) return fail(`${path} grew past ${rules.maxBytes} bytes while being read`);
    return content.toString('utf8');
  } finally {
    closeSync(descriptor);
  }
}

/** Reads a bearer token file (CONTRACT.md §10); `label` names it in messages. */
export function readTokenFile(path: string, rules: PrivateFileRules = { label: '--token-file' }): string {
  return validateToken(readPrivateFile(path, rules).trim(), rules.label);
}

export function validateToken(token: string, source: string): string {
  if (Buffer.byteLength(token) < 32) throw new UsageError(`${source}: the token must be at least 32 bytes`);
  if (/\s/.test(token)) throw new UsageError(`${source}: the token must not contain white space`);
  return token;
}

/** The whole file, or null once it holds more than `maxBytes` (it may grow after fstat). */
function readAll(descriptor: number, expectedSize: number, maxBytes: number): Buffer | null {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const chunk = Buffer.alloc(Math.min(Math.max(expectedSize, 4096), maxBytes + 1));
    const count = readSync(descriptor, chunk, 0, chunk.length, null);
    if (count === 0) return Buffer.concat(chunks);
    total += count;
    if (total > maxBytes) return null;
    chunks.push(chunk.subarray(0, count));
  }
}

function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, '0')}`;
}
