/** The image the tests run (test/deploy/build-test-image.sh) and podman, as the tests drive it. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { http, type HttpResponse } from '../support/http.ts';

const REPOSITORY = new URL('../..', import.meta.url).pathname;

/** crun fails on this machine's hybrid cgroups; runc does not. */
const PODMAN = ['--runtime', 'runc'];

/**
 * A rootful container asks for podman's default limits (1048576 open files), which runc cannot set
 * above what this machine allows: the containers get this process's own open-file limit, and 4096
 * processes (runc is refused even this process's own process limit here, but not fewer).
 */
const openFiles = spawnSync('bash', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).stdout.trim();
export const LIMITS = ['--ulimit', openFiles === 'unlimited' ? 'nofile=1048576:1048576' : `nofile=${openFiles}:${openFiles}`, '--ulimit', 'nproc=4096:4096'];

/** Fails, naming each, when a program the container tests need is not on PATH. */
export function requirePrograms(programs: string[]): void {
  const missing = programs.filter((program) => spawnSync('sh', ['-c', `command -v ${program}`]).status !== 0);
  assert.deepEqual(missing, [], `missing ${missing.join(', ')}: install the Debian packages of those names (.ci/run does)`);
}

export function podman(args: string[], timeout = 120_000): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync('podman', [...PODMAN, ...args], { encoding: 'utf8', timeout });
  return { status: result.status, stdout: result.stdout.trim(), stderr: result.stderr.trim() };
}

export function podmanOk(args: string[], timeout?: number): string {
  const result = podman(args, timeout);
  assert.equal(result.status, 0, `podman ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/**
 * A cold build (the base from Debian's mirror, then the image with its dependencies from the npm
 * registry) takes up to 25 minutes on the loaded 2-core machine: docs/DEPLOY.md has the figures.
 * This bounds a hung build, not a slow one.
 */
export const BUILD_TIMEOUT_MS = 40 * 60_000;

/**
 * Written above the CA certificates the build gets as its secret, so that a test can find any copy
 * of that file in the image (assembled here so that this source, which the build stage copies, does not hold it).
 */
export const BUILD_SECRET_MARKER = ['#', 'agentd', 'image', 'test:', 'the', 'build', 'secret'].join(' ');

/** The image of this checkout, the Containerfile built as written (under a lock: test files run side by side). */
export function agentdImage(): string {
  const lockDirectory = join(tmpdir(), 'agentd-image-build');
  mkdirSync(lockDirectory, { recursive: true });
  const built = spawnSync('flock', [join(lockDirectory, 'lock'), 'bash', join(REPOSITORY, 'test/deploy/build-test-image.sh')],
    { encoding: 'utf8', timeout: BUILD_TIMEOUT_MS, env: { ...process.env, AGENTD_TEST_CA_MARKER: BUILD_SECRET_MARKER } });
  assert.equal(built.status, 0, `building the image: ${built.stderr.slice(-4000)}`);
  return built.stdout.trim();
}

/** A TCP port nothing listens on now (the containers share the host's network). */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** GET/POST with the bearer token, retried until `accept` holds or the deadline passes. */
export async function until(what: string, probe: () => Promise<HttpResponse>, accept: (response: HttpResponse) => boolean, seconds = 60): Promise<HttpResponse> {
  const deadline = Date.now() + seconds * 1000;
  let last: HttpResponse | Error | undefined;
  while (Date.now() < deadline) {
    try {
      last = await probe();
      if (accept(last)) return last;
    } catch (error) {
      last = error as Error;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`${what}: not within ${seconds} s (last: ${last instanceof Error ? last.message : `${last?.status} ${last?.text}`})`);
}

/** A session and a turn through agentd's API, waited for to its end; the turn's result. */
export async function sessionAndTurn(url: string, token: string, input: string): Promise<{ sessionId: string; turnId: string; result: any }> {
  const headers = { authorization: `Bearer ${token}` };
  const session = await http('POST', `${url}/v1/sessions`, { headers, body: { title: 'in a container' } });
  assert.equal(session.status, 201, session.text);
  const turn = await http('POST', `${url}/v1/sessions/${session.json.id}/turns`, { headers, body: { input } });
  assert.equal(turn.status, 202, turn.text);
  const result = await until('the turn ends', () => http('GET', `${url}/v1/turns/${turn.json.id}/result`, { headers }), (response) => response.status === 200);
  return { sessionId: session.json.id, turnId: turn.json.id, result: result.json };
}

/** PostgreSQL from Debian's package on the same local base (test/deploy/postgres), built once per content. */
export function postgresImage(): string {
  const lockDirectory = join(tmpdir(), 'agentd-image-build');
  mkdirSync(lockDirectory, { recursive: true });
  const script = 'set -euo pipefail; base=$(deploy/local-base.sh); '
    + 'key=$({ podman image inspect --format "{{.Id}}" "$base"; cat test/deploy/postgres/*; } | sha256sum | cut -c1-16); '
    + 'image=localhost/agentd-test-postgres:$key; '
    + 'podman image exists "$image" || podman --runtime runc build --quiet --network host --format docker --build-arg BASE="$base" -t "$image" test/deploy/postgres >/dev/null; '
    // earlier versions' images: each holds a PostgreSQL installation
    + 'for old in $(podman images --filter reference=localhost/agentd-test-postgres --format "{{.Repository}}:{{.Tag}}"); do [ "$old" = "$image" ] || podman rmi "$old" >/dev/null 2>&1 || true; done; '
    + 'echo "$image"';
  const built = spawnSync('flock', [join(lockDirectory, 'lock'), 'bash', '-c', script], { cwd: REPOSITORY, encoding: 'utf8', timeout: BUILD_TIMEOUT_MS });
  assert.equal(built.status, 0, `building the PostgreSQL image: ${built.stderr}`);
  return built.stdout.trim();
}
