import { lstatSync, readFileSync } from 'node:fs';
import { UsageError } from './flags.ts';

/** Reads a bearer token file: a regular file, not a symlink, owned by us, no group/other bits. */
export function readTokenFile(path: string): string {
  let stats;
  try {
    stats = lstatSync(path);
  } catch {
    throw new UsageError(`--token-file: ${path} does not exist`);
  }
  if (stats.isSymbolicLink()) throw new UsageError(`--token-file: ${path} is a symlink`);
  if (!stats.isFile()) throw new UsageError(`--token-file: ${path} is not a regular file`);
  if (typeof process.getuid === 'function' && stats.uid !== process.getuid()) {
    throw new UsageError(`--token-file: ${path} is not owned by the server user`);
  }
  if ((stats.mode & 0o077) !== 0) throw new UsageError(`--token-file: ${path} must not be readable or writable by group or others (chmod 600)`);
  return validateToken(readFileSync(path, 'utf8').trim(), '--token-file');
}

export function validateToken(token: string, source: string): string {
  if (Buffer.byteLength(token) < 32) throw new UsageError(`${source}: the token must be at least 32 bytes`);
  if (/\s/.test(token)) throw new UsageError(`${source}: the token must not contain white space`);
  return token;
}
