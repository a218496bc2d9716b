// Near misses of the access checks (CONTRACT.md §1), through the real server: each refusal is shown
// with the spellings that sit just inside the edge (answered) and just outside it (refused).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { startTestServer, type TestServer } from '../support/server.ts';

const MESSAGES: Record<string, string> = {
  invalid_host: 'the Host header does not name this loopback server',
  origin_not_allowed: 'this browser origin is not allowed',
};

function assertRefused(response: { status: number; json: any }, code: string, what: string): void {
  assert.equal(response.status, 403, `${what}: ${response.status}`);
  assert.equal(response.json?.error?.code, code, what);
  assert.equal(response.json.error.message, MESSAGES[code], what);
}

describe('the loopback Host check at its edge', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('answers every spelling of the three loopback names with this port', async () => {
    const port = server.server.port;
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LocalHost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`]) {
      assert.equal((await server.request('GET', '/healthz', { headers: { host } })).status, 200, host);
    }
  });

  it('refuses prefix and suffix look-alikes, other ports and other spellings of loopback', async () => {
    const port = server.server.port;
    const nearMisses = [
      `localhost.evil.example:${port}`, // a DNS-rebinding name that starts like localhost
      `127.0.0.1.nip.io:${port}`,
      `evil.localhost:${port}`,
      `localhost.:${port}`,
      `localhost:${port}0`,
      `localhost:${port}.evil.example`,
      `localhost:${port + 1}`,
      `127.0.0.1:${port - 1}`,
      `localhost:0${port}`,
      'localhost',
      '127.0.0.1',
      '[::1]',
      `127.0.0.2:${port}`,
      `127.1:${port}`,
      `[0:0:0:0:0:0:0:1]:${port}`,
      `[::ffff:127.0.0.1]:${port}`,
      `::1:${port}`,
    ];
    for (const host of nearMisses) assertRefused(await server.request('GET', '/healthz', { headers: { host } }), 'invalid_host', host);
  });
});

describe('the CORS origin check at its edge', () => {
  let server: TestServer;
  const allowed = 'https://app.example';
  before(async () => {
    server = await startTestServer({ args: ['--cors-origin', allowed] });
  });
  after(() => server.close());

  it('answers the configured origin, spelled exactly', async () => {
    const response = await server.request('GET', '/healthz', { headers: { origin: allowed } });
    assert.equal(response.status, 200);
    assert.equal(response.headers['access-control-allow-origin'], allowed);
  });

  it('refuses look-alikes: suffix, prefix, scheme, port, path, case, null', async () => {
    for (const origin of [
      `${allowed}.evil.example`,
      `${allowed}:443`,
      `${allowed}/`,
      'https://app.exampl',
      'https://evil-app.example',
      'http://app.example',
      'https://APP.example',
      'null',
      '',
    ]) {
      const response = await server.request('GET', '/healthz', { headers: { origin } });
      assertRefused(response, 'origin_not_allowed', JSON.stringify(origin));
      assert.equal(response.headers['access-control-allow-origin'], undefined, origin);
    }
  });
});

describe('the bearer token comparison at its edge', () => {
  let server: TestServer;
  const token = 'k'.repeat(20) + '0123456789ab';
  before(async () => {
    const directory = mkdtempSync(join(tmpdir(), 'agentd-edges-token-'));
    const tokenFile = join(directory, 'token');
    writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
    server = await startTestServer({ args: ['--token-file', tokenFile] });
  });
  after(() => server.close());

  it('answers the exact token', async () => {
    assert.equal((await server.request('GET', '/v1/sessions', { headers: { authorization: `Bearer ${token}` } })).status, 200);
  });

  it('refuses one byte short, one byte long, one byte changed, and other schemes or spacing', async () => {
    const lastChanged = token.slice(0, -1) + 'c';
    const firstChanged = 'j' + token.slice(1);
    for (const authorization of [
      `Bearer ${token.slice(0, -1)}`,
      `Bearer ${token}b`,
      `Bearer ${lastChanged}`,
      `Bearer ${firstChanged}`,
      `Bearer ${token.toUpperCase()}`,
      `bearer ${token}`,
      `BEARER ${token}`,
      `Bearer  ${token}`,
      `Bearer${token}`,
      `Token ${token}`,
      token,
      'Bearer ',
      `Bearer ${token}${token}`,
    ]) {
      const response = await server.request('GET', '/v1/sessions', { headers: { authorization } });
      assert.equal(response.status, 401, authorization);
      assert.equal(response.json.error.code, 'unauthorized', authorization);
      assert.equal(response.json.error.message, 'missing or invalid bearer token', authorization);
    }
  });
});

describe('preflight, CORS headers and which checks apply in bearer mode', () => {
  let server: TestServer;
  const allowed = 'https://app.example';
  const token = 'p'.repeat(40);
  before(async () => {
    const directory = mkdtempSync(join(tmpdir(), 'agentd-edges-token-'));
    const tokenFile = join(directory, 'token');
    writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
    server = await startTestServer({ args: ['--token-file', tokenFile, '--cors-origin', allowed] });
  });
  after(() => server.close());

  it('answers a preflight from the allowed origin without the token, with every CORS header spelled out', async () => {
    const preflight = await server.request('OPTIONS', '/v1/sessions', { headers: { origin: allowed, 'access-control-request-method': 'POST' } });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers['access-control-allow-origin'], allowed);
    assert.equal(preflight.headers.vary, 'Origin');
    assert.equal(preflight.headers['access-control-allow-methods'], 'GET, POST, PATCH, DELETE, OPTIONS');
    assert.equal(preflight.headers['access-control-allow-headers'], 'Authorization, Content-Type, Last-Event-ID');
    assert.equal(preflight.headers['access-control-max-age'], '600');
    assert.equal(preflight.headers['access-control-expose-headers'], 'X-Request-ID, Retry-After');
  });

  it('treats OPTIONS without an Origin as an ordinary request (the token is required), and refuses a preflight from another origin', async () => {
    const bare = await server.request('OPTIONS', '/v1/sessions');
    assert.equal(bare.status, 401);
    assert.equal(bare.json.error.code, 'unauthorized');
    assertRefused(await server.request('OPTIONS', '/v1/sessions', { headers: { origin: 'https://evil.example' } }), 'origin_not_allowed', 'preflight from another origin');
  });

  it('does not let an allowed origin stand in for the token', async () => {
    const response = await server.request('GET', '/v1/sessions', { headers: { origin: allowed } });
    assert.equal(response.status, 401);
    assert.equal((await server.request('GET', '/v1/sessions', { headers: { origin: allowed, authorization: `Bearer ${token}` } })).status, 200);
  });

  it('refuses a request with no Authorization header at all, and checks no Host with a token (the token is the proof)', async () => {
    const none = await server.request('GET', '/v1/sessions');
    assert.equal(none.status, 401);
    assert.equal(none.json.error.code, 'unauthorized');
    for (const host of ['agentd.example:443', 'localhost.evil.example', '10.0.0.7:4096']) {
      assert.equal((await server.request('GET', '/v1/sessions', { headers: { host, authorization: `Bearer ${token}` } })).status, 200, host);
    }
  });
});

describe('a request with no Host header on a loopback server', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('is refused as invalid_host (HTTP/1.0 may omit it)', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(server.server.port, '127.0.0.1');
      const chunks: Buffer[] = [];
      socket.on('data', (chunk) => chunks.push(chunk));
      socket.on('error', reject);
      socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
      socket.end('GET /healthz HTTP/1.0\r\n\r\n');
    });
    assert.match(answer, /^HTTP\/1\.[01] 403 /);
    assert.match(answer, /"code":"invalid_host"/);
  });
});
