/**
 * A PostgreSQL cluster of the test's own (initdb into a temporary directory, a free port), so it can
 * be stopped and started under load without touching the shared server other tests use.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export interface PrivatePostgres {
  /** postgres://…/agentd on the private cluster */
  databaseUrl: string;
  stop(): void;
  start(): void;
  destroy(): void;
}

function binDirectory(): string {
  const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
  for (const version of versions) if (existsSync(`/usr/lib/postgresql/${version}/bin/initdb`)) return `/usr/lib/postgresql/${version}/bin`;
  throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql');
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = binDirectory();
  const root = mkdtempSync(join(tmpdir(), 'agentd-pg-'));
  const data = join(root, 'data');
  // initdb refuses to run as root: the cluster belongs to the postgres user.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { uid, gid } = postgresUser();
    chownSync(root, uid, gid);
  }
  chmodSync(root, 0o755);
  const run = (program: string, args: string[]) =>
    execFileSync(asRoot ? 'runuser' : join(bin, program), asRoot ? ['-u', 'postgres', '--', join(bin, program), ...args] : args, { stdio: 'pipe', timeout: 60_000 });
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  const options = `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c fsync=off`;
  const start = () => void run('pg_ctl', ['-D', data, '-o', options, '-l', join(root, 'log'), '-w', '-t', '30', 'start']);
  start();
  const admin = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres` });
  await admin.connect();
  await admin.query('create database agentd');
  await admin.end();
  return {
    databaseUrl: `postgres://postgres@127.0.0.1:${port}/agentd`,
    stop: () => void run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']),
    start,
    destroy() {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // already stopped
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}

function postgresUser(): { uid: number; gid: number } {
  const [uid, gid] = execFileSync('id', ['-u', 'postgres']).toString().trim().split(' ').concat(execFileSync('id', ['-g', 'postgres']).toString().trim());
  return { uid: Number(uid), gid: Number(gid) };
}
