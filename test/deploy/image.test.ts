/**
 * CONTRACT.md §23, the image: the root Containerfile, built as written with podman (runc) on a base
 * made with mmdebstrap plus Node 24 and npm from the npm registry (deploy/local-base.sh, cached by
 * content), its build stage's npm reaching the registry with the host's CA as a build secret, runs
 * `agentd serve` as a non-root user on 0.0.0.0, refuses to start without a token, reports healthy
 * through its HEALTHCHECK, serves a session and a turn against the fake provider, and finds the
 * session again in its state volume after the container is replaced.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { http } from '../support/http.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { fakeProviderModels } from '../support/server.ts';
import { agentdImage, BUILD_SECRET_MARKER, BUILD_TIMEOUT_MS, freePort, LIMITS, podman, podmanOk, requirePrograms, sessionAndTurn, until } from './containers.ts';

const TOKEN = 'container-token-'.padEnd(40, 'x');
const name = (what: string) => `agentd-test-${what}-${process.pid}`;

describe('the agentd image', () => {
  let image = '';
  let fake: FakeProvider;
  const scratch = mkdtempSync(join(tmpdir(), 'agentd-image-'));
  const [tokenSecret, modelsSecret, volume] = [name('token'), name('models'), name('state')];
  const containers: string[] = [];

  before(async () => {
    requirePrograms(['podman', 'runc', 'mmdebstrap', 'flock']);
    image = agentdImage();
    fake = await startFakeProvider();
    const tokenFile = join(scratch, 'token');
    writeFileSync(tokenFile, TOKEN, { mode: 0o600 });
    const modelsFile = join(scratch, 'models.json');
    writeFileSync(modelsFile, JSON.stringify(fakeProviderModels(fake.baseUrl)), { mode: 0o600 });
    podmanOk(['secret', 'create', tokenSecret, tokenFile]);
    podmanOk(['secret', 'create', modelsSecret, modelsFile]);
  }, { timeout: BUILD_TIMEOUT_MS });
  after(async () => {
    for (const container of containers) podman(['rm', '--force', '--time', '0', container]);
    podman(['volume', 'rm', '--force', volume]);
    podman(['secret', 'rm', tokenSecret]);
    podman(['secret', 'rm', modelsSecret]);
    await fake?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  /** agentd in a container on the host's network (the fake provider listens on its loopback). */
  async function runAgentd(container: string): Promise<string> {
    const port = await freePort();
    containers.push(container);
    podmanOk(['run', '--detach', '--name', container, '--network', 'host', ...LIMITS,
      '--secret', `${tokenSecret},target=agentd-token,uid=10001,gid=10001,mode=0400`,
      '--secret', `${modelsSecret},target=models.json,uid=10001,gid=10001,mode=0400`,
      '--env', `AGENTD_PORT=${port}`, '--env', 'AGENTD_MODELS_FILE=/run/secrets/models.json',
      '--volume', `${volume}:/var/lib/agentd`, image]);
    const url = `http://127.0.0.1:${port}`;
    await until('agentd answers /readyz', () => http('GET', `${url}/readyz`, { headers: { authorization: `Bearer ${TOKEN}` } }), (response) => response.status === 200);
    assert.match(podmanOk(['logs', container]), new RegExp(`agentd listening on http://0\\.0\\.0\\.0:${port}`));
    return url;
  }

  it('runs agentd serve as a non-root user, on 0.0.0.0:4096, with a HEALTHCHECK on /readyz and the state dir a volume', () => {
    const inspected = JSON.parse(podmanOk(['image', 'inspect', image]))[0];
    const config = inspected.Config;
    assert.equal(config.User, 'agentd');
    assert.deepEqual(config.Entrypoint, ['agentd']);
    assert.deepEqual(config.Cmd, ['serve']);
    assert.ok(config.Env.includes('AGENTD_HOST=0.0.0.0') && config.Env.includes('AGENTD_PORT=4096'), config.Env.join(' '));
    assert.ok(config.Env.includes('AGENTD_TOKEN_FILE=/run/secrets/agentd-token'));
    assert.ok('/var/lib/agentd' in config.Volumes);
    assert.ok('4096/tcp' in config.ExposedPorts);
    // kept by --format docker (podman's default OCI format drops it)
    assert.match(inspected.Healthcheck.Test.join(' '), /healthcheck\.mjs/);
    const id = podmanOk(['run', '--rm', ...LIMITS, '--entrypoint', 'id', image, '-u']);
    assert.equal(id, '10001');
  });

  it('holds the sandbox\'s programs, the bundle\'s SBOM and notices, and no build tool', () => {
    const script = 'for p in bwrap nft slirp4netns ip unshare nsenter setpriv rg git node; do command -v $p >/dev/null || echo "missing $p"; done;'
      + ' for p in npm tsc g++; do command -v $p >/dev/null && echo "has $p"; done;'
      + ' ls /opt/agentd/dist/bundle/sbom.cdx.json /opt/agentd/dist/bundle/THIRD-PARTY-NOTICES.txt /opt/agentd/node_modules/better-sqlite3 >/dev/null;'
      + ' ls /opt/agentd/node_modules/typescript 2>/dev/null && echo "has typescript"; true';
    assert.equal(podmanOk(['run', '--rm', ...LIMITS, '--entrypoint', 'sh', image, '-c', script]), '');
  });

  it('keeps nothing of the build secret: no copy of the CA file, no variable pointing at one', () => {
    const { Env: env } = JSON.parse(podmanOk(['image', 'inspect', image]))[0].Config;
    assert.deepEqual(env.filter((variable: string) => /CA_CERTS|CAFILE|SSL_CERT|\/run\/secrets\/ca\b/i.test(variable)), []);
    // the marker is the secret file's first line (test/deploy/build-test-image.sh)
    const search = `test -e /run/secrets/ca && echo "has /run/secrets/ca";`
      + ` grep -rlsF --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev '${BUILD_SECRET_MARKER}' /; true`;
    assert.equal(podmanOk(['run', '--rm', ...LIMITS, '--user', 'root', '--entrypoint', 'sh', image, '-c', search], 300_000), '');
  });

  it('refuses to start without a token, naming where it looked', () => {
    const refused = podman(['run', '--rm', ...LIMITS, image]);
    assert.equal(refused.status, 2, refused.stderr);
    // podman's own complaints (no systemd here for the healthcheck's timer) are not agentd's
    const agentdLines = refused.stderr.split('\n').filter((line) => !line.startsWith('time='));
    assert.deepEqual(agentdLines, ['agentd: AGENTD_TOKEN_FILE: /run/secrets/agentd-token does not exist']);
  });

  it('refuses, in one line naming the privilege, to start the sandbox runner in a container that masks /proc', () => {
    const runner = podman(['run', '--rm', ...LIMITS, '--entrypoint', 'agentd-sandbox', image, '--workspace', '/workspace']);
    assert.equal(runner.status, 1, runner.stderr);
    const lines = runner.stdout.split('\n');
    assert.equal(lines.length, 1, runner.stdout);
    const refusal = JSON.parse(lines[0]);
    assert.equal(refusal.type, 'unavailable');
    assert.equal(refusal.missing, 'proc');
    assert.match(refusal.message, /^\/proc: cannot mount a fresh one in a new PID namespace, .*masked paths: podman --security-opt unmask=ALL/);

    const server = podman(['run', '--rm', ...LIMITS, '--secret', `${tokenSecret},target=agentd-token,uid=10001,gid=10001,mode=0400`, image, 'serve', '--sandbox-runner', '/opt/agentd/bin/agentd-sandbox']);
    assert.equal(server.status, 2, server.stderr);
    const agentdLines = server.stderr.split('\n').filter((line) => !line.startsWith('time='));
    assert.equal(agentdLines.length, 1, server.stderr);
    assert.match(agentdLines[0], /^agentd: --sandbox-runner \S+: the sandbox cannot start: proc: \/proc: cannot mount a fresh one/);
  });

  it('starts the sandbox runner with the privileges docs/DEPLOY.md gives it', () => {
    const privileges = ['--user', 'root', '--security-opt', 'unmask=ALL', '--device', '/dev/net/tun', '--cap-add', 'SYS_ADMIN,NET_ADMIN,SYS_PTRACE', '--volume', '/sys/fs/cgroup:/sys/fs/cgroup:rw'];
    const documented = readFileSync(join(new URL('../..', import.meta.url).pathname, 'docs/DEPLOY.md'), 'utf8').replaceAll(/\s+/g, ' ');
    assert.ok(documented.includes(privileges.join(' ')), 'docs/DEPLOY.md gives these options');
    // stdin closes at once: the runner says ready, then stops
    const runner = podman(['run', '--rm', '--interactive', ...LIMITS, ...privileges, '--entrypoint', 'agentd-sandbox', image, '--workspace', '/workspace']);
    assert.equal(JSON.parse(runner.stdout.split('\n')[0]).type, 'ready', runner.stdout + runner.stderr);
  });

  it('serves a session and a turn, reports healthy, and finds the session after the container is replaced', async () => {
    const url = await runAgentd(name('first'));
    assert.equal(podman(['healthcheck', 'run', name('first')]).status, 0, 'the HEALTHCHECK passes');
    const unauthorised = await http('GET', `${url}/v1/sessions`);
    assert.equal(unauthorised.status, 401);

    fake.enqueue({ kind: 'reply', text: 'Hello from the container.' });
    const { sessionId, result } = await sessionAndTurn(url, TOKEN, 'say hello');
    assert.equal(result.output.assistantText, 'Hello from the container.');
    assert.equal(fake.requests.length, 1, 'the turn reached the model');

    podmanOk(['stop', '--time', '20', name('first')]);
    const second = await runAgentd(name('second'));
    const found = await http('GET', `${second}/v1/sessions/${sessionId}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(found.status, 200, found.text);
    assert.equal(found.json.title, 'in a container');
  });
});
