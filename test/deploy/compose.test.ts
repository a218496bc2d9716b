/**
 * CONTRACT.md §23, compose: deploy/compose.yaml, brought up by podman-compose on the images built
 * here (agentd's, and PostgreSQL from Debian's package on the same local base), answers /readyz on
 * both agentd, and a turn running on one is taken over by the other when the first is stopped.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chownSync, copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { http } from '../support/http.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { fakeProviderModels } from '../support/server.ts';
import { agentdImage, BUILD_TIMEOUT_MS, freePort, LIMITS, podman, postgresImage, requirePrograms, until } from './containers.ts';

const REPOSITORY = new URL('../..', import.meta.url).pathname;
const TOKEN = 'compose-token-'.padEnd(40, 'y');
const PROJECT = `agentd-test-${process.pid}`;
const AGENTD_UID = 10001;

/** The fake provider listens on loopback; the containers reach the host through this relay. */
async function relayTo(port: number): Promise<Server> {
  const relay = createServer((socket) => socket.pipe(connect(port, '127.0.0.1')).pipe(socket).on('error', () => socket.destroy()));
  await new Promise<void>((resolve) => relay.listen(0, '0.0.0.0', resolve));
  return relay;
}

describe('deploy/compose.yaml under podman-compose', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'agentd-compose-'));
  let fake: FakeProvider;
  let relay: Server;
  let env: NodeJS.ProcessEnv;
  const urls: string[] = [];

  const compose = (args: string[]) => spawnSync('podman-compose', ['-p', PROJECT, '-f', join(scratch, 'compose.yaml'), ...args], { encoding: 'utf8', env, timeout: 300_000 });

  before(async () => {
    requirePrograms(['podman', 'runc', 'mmdebstrap', 'podman-compose', 'flock']);
    const [agentd, postgres] = [agentdImage(), postgresImage()];
    fake = await startFakeProvider();
    relay = await relayTo(fake.port);
    copyFileSync(join(REPOSITORY, 'deploy/compose.yaml'), join(scratch, 'compose.yaml'));
    const secret = (name: string, content: string, owner?: number) => {
      writeFileSync(join(scratch, name), content, { mode: 0o600 });
      if (owner !== undefined) chownSync(join(scratch, name), owner, owner);
    };
    const models = fakeProviderModels(`http://host.containers.internal:${(relay.address() as { port: number }).port}/v1`);
    secret('token', TOKEN, AGENTD_UID);
    secret('models.json', JSON.stringify(models), AGENTD_UID);
    secret('postgres-password', 'compose-database-password');
    secret('pgpass', 'postgres:5432:agentd:agentd:compose-database-password\n', AGENTD_UID);
    // podman-compose runs podman: the runtime and limits the other container tests use (containers.ts)
    const limits = LIMITS.filter((_, index) => index % 2 === 1).map((limit) => `"${limit}"`).join(', ');
    writeFileSync(join(scratch, 'containers.conf'), `[containers]\ndefault_ulimits = [${limits}]\n[engine]\nruntime = "runc"\n`);
    const [portA, portB] = [await freePort(), await freePort()];
    env = { ...process.env, CONTAINERS_CONF: join(scratch, 'containers.conf'), AGENTD_IMAGE: agentd, POSTGRES_IMAGE: postgres, AGENTD_A_PORT: String(portA), AGENTD_B_PORT: String(portB) };
    urls.push(`http://127.0.0.1:${portA}`, `http://127.0.0.1:${portB}`);
    const up = compose(['up', '-d']);
    assert.equal(up.status, 0, up.stdout + up.stderr);
    // the image test may hold the build lock for a cold build; then PostgreSQL's image is built
  }, { timeout: 2 * BUILD_TIMEOUT_MS });
  after(async () => {
    compose(['down', '--volumes']);
    relay?.close();
    await fake?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  const headers = { authorization: `Bearer ${TOKEN}` };

  it('brings up both agentd, each ready on the one PostgreSQL', { timeout: 2 * 120_000 + 10_000 }, async () => {
    for (const [index, url] of urls.entries()) {
      const ready = await until(`agentd-${'ab'[index]} answers /readyz`, () => http('GET', `${url}/readyz`, { headers }), (response) => response.status === 200, 120);
      assert.equal(ready.json.instance, `agentd-${'ab'[index]}`);
    }
  });

  it('hands a running turn to the other instance when one is stopped', async () => {
    let asked = 0;
    fake.respond('COMPOSE-TAKEOVER', () => (asked++ === 0 ? { kind: 'hang' } : { kind: 'reply', text: 'finished by the other instance' }));
    const session = await http('POST', `${urls[0]}/v1/sessions`, { headers, body: { title: 'compose' } });
    assert.equal(session.status, 201, session.text);
    const turn = await http('POST', `${urls[0]}/v1/sessions/${session.json.id}/turns`, { headers, body: { input: 'COMPOSE-TAKEOVER' } });
    assert.equal(turn.status, 202, turn.text);
    await until('the model is asked', async () => ({ status: asked, headers: {}, text: '', json: null }), (response) => response.status >= 1);

    const stopped = podman(['stop', '--time', '20', `${PROJECT}_agentd-a_1`]);
    assert.equal(stopped.status, 0, stopped.stderr);
    const result = await until('the turn ends on agentd-b', () => http('GET', `${urls[1]}/v1/turns/${turn.json.id}/result`, { headers }), (response) => response.status === 200, 90);
    assert.equal(result.json.turn.status, 'completed', result.text);
    assert.equal(result.json.output.assistantText, 'finished by the other instance');
    assert.equal(asked, 2, 'the second instance asked the model again');
  });
});
