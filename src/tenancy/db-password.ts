/**
 * Each tenant role's password lives in `<tenant state root>/<tenant id>/db-password` (mode 0600),
 * generated once and reused on every start. PostgreSQL only ever receives its SCRAM-SHA-256
 * verifier, so the password itself appears in no statement, server log or pg_stat_activity.
 */
import { closeSync, constants, lstatSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { readPrivateFile } from '../config/token-file.ts';

export const PASSWORD_FILE_NAME = 'db-password';

export interface TenantPassword {
  password: string;
  /** true when this call generated it: the role's verifier must be (re)set */
  created: boolean;
}

/** The tenant's server-owned directory, created 0700 if missing; refused when it is a symlink. */
export function tenantStateDir(tenantStateRoot: string, tenantId: string): string {
  mkdirSync(tenantStateRoot, { recursive: true, mode: 0o700 });
  const directory = join(tenantStateRoot, tenantId);
  try {
    mkdirSync(directory, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const stats = lstatSync(directory);
  if (stats.isSymbolicLink() || !stats.isDirectory()) throw new Error(`tenant state dir ${directory} is not a plain directory`);
  return directory;
}

/** Reads the tenant's password file, or creates it (exclusively, never through a symlink). */
export function ensureTenantPassword(tenantStateRoot: string, tenantId: string): TenantPassword {
  const file = join(tenantStateDir(tenantStateRoot, tenantId), PASSWORD_FILE_NAME);
  const password = randomBytes(32).toString('base64url');
  let descriptor: number;
  try {
    descriptor = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const stored = readPrivateFile(file, { label: `tenant ${tenantId} ${PASSWORD_FILE_NAME}`, exactMode: 0o600, maxBytes: 1024 }).trim();
    // An interrupted first write leaves a short file; a new password is then the only way forward.
    if (!/^[A-Za-z0-9_-]{43}$/.test(stored)) throw new Error(`${file} does not hold a generated password; delete it to generate a new one`);
    return { password: stored, created: false };
  }
  try {
    writeSync(descriptor, `${password}\n`);
  } finally {
    closeSync(descriptor);
  }
  return { password, created: true };
}

const SCRAM_ITERATIONS = 4096;

/** The verifier PostgreSQL stores for a SCRAM-SHA-256 password (RFC 5802/7677 keys, PostgreSQL's text form). */
export function scramSha256Verifier(password: string, salt = randomBytes(16), iterations = SCRAM_ITERATIONS): string {
  const saltedPassword = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', saltedPassword).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', saltedPassword).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}
