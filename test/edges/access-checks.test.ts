// The access checks of CONTRACT.md §1 (http/access.ts) on a bare Fastify instance answering through
// inject: the same near misses as access.test.ts (which goes through the real server), here fast
// enough to run against each of the module's mutants, plus the registry mode and the order of the
// checks. What a refusal looks like on the wire is access.test.ts's business.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { checkAccess, CORS_HEADERS, type AccessPolicy } from '../../src/http/access.ts';
import { ApiError } from '../../src/domain/errors.ts';
import type { Tenant, TenantRegistry } from '../../src/config/tenant-registry.ts';

const PORT = 4242;
const ALLOWED = 'https://app.example';
const TOKEN = 'k'.repeat(20) + '0123456789ab';
/** How many OPTIONS requests reached their route: a preflight answered in the hook must not. */
const routeCalls = { count: 0 };

function app(policy: Partial<AccessPolicy> = {}) {
  const access: AccessPolicy = { corsOrigins: new Set(), token: null, port: () => PORT, ...policy };
  const server = Fastify();
  server.decorateRequest('tenant', null);
  server.addHook('onRequest', (request, reply, done) => {
    try {
      if (!checkAccess(access, request, reply)) done();
    } catch (error) {
      done(error as Error);
    }
  });
  server.setErrorHandler((error, _request, reply) => {
    assert.ok(error instanceof ApiError, `only ApiError leaves the checks: ${error}`);
    return reply.code(error.status).send({ code: error.code, message: error.message });
  });
  const answer = (request: { tenant: Tenant | null }) => ({ tenant: request.tenant?.id ?? null });
  server.get('/x', async (request) => answer(request));
  server.options('/x', async (request) => {
    routeCalls.count += 1;
    return { ...answer(request), routed: true };
  });
  return server;
}

async function ask(server: ReturnType<typeof app>, headers: Record<string, string>, method: 'GET' | 'OPTIONS' = 'GET') {
  const response = await server.inject({ method, url: '/x', headers: { host: `127.0.0.1:${PORT}`, ...headers } });
  return { status: response.statusCode, headers: response.headers, body: response.body ? response.json() : null };
}

const REFUSALS = {
  invalid_host: [403, 'the Host header does not name this loopback server'],
  origin_not_allowed: [403, 'this browser origin is not allowed'],
  unauthorized: [401, 'missing or invalid bearer token'],
} as const;

function assertRefused(response: Awaited<ReturnType<typeof ask>>, code: keyof typeof REFUSALS, what: string): void {
  const [status, message] = REFUSALS[code];
  assert.deepEqual([response.status, response.body], [status, { code, message }], what);
}

test('loopback mode answers the three loopback names with this port, in any case', async () => {
  const server = app();
  for (const host of [`127.0.0.1:${PORT}`, `localhost:${PORT}`, `LocalHost:${PORT}`, `LOCALHOST:${PORT}`, `[::1]:${PORT}`]) {
    assert.deepEqual([(await ask(server, { host })).status], [200], host);
  }
});

test('loopback mode refuses every look-alike Host', async () => {
  const server = app();
  const nearMisses = [
    `localhost.evil.example:${PORT}`, `127.0.0.1.nip.io:${PORT}`, `evil.localhost:${PORT}`, `xlocalhost:${PORT}`, `localhost.:${PORT}`,
    `localhost:${PORT}0`, `localhost:${PORT}.evil.example`, `localhost:${PORT + 1}`, `127.0.0.1:${PORT - 1}`, `[::1]:${PORT + 1}`,
    `localhost:0${PORT}`, 'localhost', '127.0.0.1', '[::1]', `127.0.0.2:${PORT}`, `127.1:${PORT}`, `[0:0:0:0:0:0:0:1]:${PORT}`,
    `[::ffff:127.0.0.1]:${PORT}`, `::1:${PORT}`, `:${PORT}`, '',
  ];
  for (const host of nearMisses) assertRefused(await ask(server, { host }), 'invalid_host', JSON.stringify(host));
  // HTTP/1.0 may omit Host; inject always sends one, so the header is removed by a hook that runs first
  const bare = Fastify();
  bare.decorateRequest('tenant', null);
  let refused: unknown = null;
  bare.addHook('onRequest', (request, reply) => {
    delete request.headers.host;
    try {
      checkAccess({ corsOrigins: new Set(), token: null, port: () => PORT }, request, reply);
    } catch (error) {
      refused = error;
    }
    reply.send({});
  });
  bare.get('/x', async () => ({}));
  await bare.inject({ method: 'GET', url: '/x' });
  assert.ok(refused instanceof ApiError && refused.code === 'invalid_host', 'no Host at all is refused');
});

test('the Host check applies only in loopback mode: a token or a registry is the proof', async () => {
  const withToken = app({ token: Buffer.from(TOKEN) });
  const registry: TenantRegistry = { version: 1, tenants: [{ id: 'a', workspaceRoot: '/srv/a', credentials: [{ id: 'c', tokenFile: '/etc/c', token: TOKEN }] }] };
  const withRegistry = app({ tenants: registry });
  for (const host of ['agentd.example:443', `localhost.evil.example:${PORT}`, '10.0.0.7:4096']) {
    assert.equal((await ask(withToken, { host, authorization: `Bearer ${TOKEN}` })).status, 200, host);
    assert.equal((await ask(withRegistry, { host, authorization: `Bearer ${TOKEN}` })).status, 200, host);
  }
});

test('an allowed origin is answered with every CORS header; its look-alikes are refused without one', async () => {
  const server = app({ corsOrigins: new Set([ALLOWED]) });
  const allowed = await ask(server, { origin: ALLOWED });
  assert.equal(allowed.status, 200);
  assert.equal(allowed.headers['access-control-allow-origin'], ALLOWED);
  assert.equal(allowed.headers.vary, 'Origin');
  for (const [name, value] of Object.entries(CORS_HEADERS)) assert.equal(allowed.headers[name], value, name);
  assert.deepEqual(CORS_HEADERS, {
    'access-control-allow-methods': 'GET, POST, PATCH, DELETE, OPTIONS',
    'access-control-allow-headers': 'Authorization, Content-Type, Last-Event-ID',
    'access-control-max-age': '600',
    'access-control-expose-headers': 'X-Request-ID, Retry-After',
  });
  const plain = await ask(server, {});
  assert.equal(plain.status, 200);
  assert.equal(plain.headers['access-control-allow-origin'], undefined, 'no Origin, no CORS headers');
  assert.equal(plain.headers['access-control-max-age'], undefined);
  for (const origin of [`${ALLOWED}.evil.example`, `${ALLOWED}:443`, `${ALLOWED}/`, 'https://app.exampl', 'https://evil-app.example', 'http://app.example', 'https://APP.example', 'null', '']) {
    const response = await ask(server, { origin });
    assertRefused(response, 'origin_not_allowed', JSON.stringify(origin));
    assert.equal(response.headers['access-control-allow-origin'], undefined, origin);
  }
});

test('the Origin is checked before the Host: a foreign origin on a foreign host is refused as the origin', async () => {
  const server = app({ corsOrigins: new Set([ALLOWED]) });
  assertRefused(await ask(server, { origin: 'https://evil.example', host: 'evil.example' }), 'origin_not_allowed', 'both wrong');
  assertRefused(await ask(server, { origin: ALLOWED, host: 'evil.example' }), 'invalid_host', 'an allowed origin does not excuse the Host');
});

test('a preflight from the allowed origin is answered 204 before the token; OPTIONS without an Origin is an ordinary request', async () => {
  const server = app({ corsOrigins: new Set([ALLOWED]), token: Buffer.from(TOKEN) });
  const routedBefore = routeCalls.count;
  const preflight = await ask(server, { origin: ALLOWED, 'access-control-request-method': 'POST' }, 'OPTIONS');
  assert.deepEqual([preflight.status, preflight.body], [204, null], 'answered in the hook, never routed');
  assert.equal(routeCalls.count, routedBefore, 'the preflight never reached its route');
  assert.equal(preflight.headers['access-control-allow-origin'], ALLOWED);
  assertRefused(await ask(server, {}, 'OPTIONS'), 'unauthorized', 'OPTIONS without an Origin needs the token');
  const routed = await ask(server, { authorization: `Bearer ${TOKEN}` }, 'OPTIONS');
  assert.deepEqual([routed.status, routed.body], [200, { tenant: null, routed: true }]);
  assertRefused(await ask(server, { origin: 'https://evil.example' }, 'OPTIONS'), 'origin_not_allowed', 'a preflight from another origin');
  assertRefused(await ask(server, { origin: ALLOWED }), 'unauthorized', 'an allowed origin does not stand in for the token');
  // loopback mode: a preflight still passes the Host check first
  const loopback = app({ corsOrigins: new Set([ALLOWED]) });
  assert.equal((await ask(loopback, { origin: ALLOWED }, 'OPTIONS')).status, 204);
  assertRefused(await ask(loopback, { origin: ALLOWED, host: 'evil.example' }, 'OPTIONS'), 'invalid_host', 'a preflight to a rebinding name');
});

test('the bearer token is compared whole, byte for byte, behind the exact scheme', async () => {
  const server = app({ token: Buffer.from(TOKEN) });
  assert.equal((await ask(server, { authorization: `Bearer ${TOKEN}` })).status, 200);
  const nearMisses = [
    `Bearer ${TOKEN.slice(0, -1)}`, `Bearer ${TOKEN}b`, `Bearer ${TOKEN.slice(0, -1)}c`, `Bearer j${TOKEN.slice(1)}`, `Bearer ${TOKEN.toUpperCase()}`,
    `bearer ${TOKEN}`, `BEARER ${TOKEN}`, `Bearer  ${TOKEN}`, `Bearer${TOKEN}`, `Token ${TOKEN}`, TOKEN, 'Bearer ', `Bearer ${TOKEN}${TOKEN}`,
    `Bearer ${'k'.repeat(TOKEN.length)}`, `x Bearer ${TOKEN}`,
  ];
  for (const authorization of nearMisses) assertRefused(await ask(server, { authorization }), 'unauthorized', authorization);
  assertRefused(await ask(server, {}), 'unauthorized', 'no Authorization header');
});

test('a token longer or shorter than the secret never matches, even when it starts with it or the secret starts with it', async () => {
  // the constant-time comparison pads nothing: a longer token compared as the secret must still fail on length
  const server = app({ token: Buffer.from(TOKEN) });
  for (const authorization of [`Bearer ${TOKEN}\u0000`, `Bearer ${TOKEN.slice(0, 16)}`, `Bearer ${TOKEN} `]) {
    assertRefused(await ask(server, { authorization }), 'unauthorized', JSON.stringify(authorization));
  }
});

test('with a registry the token names the request\'s tenant; anything else is unauthorized', async () => {
  const tenant = (id: string, token: string): Tenant => ({ id, workspaceRoot: `/srv/${id}`, credentials: [{ id: `${id}-1`, tokenFile: `/etc/${id}`, token }] });
  const tokenB = 'b'.repeat(32);
  const registry: TenantRegistry = { version: 1, tenants: [tenant('a', TOKEN), tenant('b', tokenB)] };
  const server = app({ tenants: registry });
  assert.deepEqual((await ask(server, { authorization: `Bearer ${TOKEN}` })).body, { tenant: 'a' });
  assert.deepEqual((await ask(server, { authorization: `Bearer ${tokenB}` })).body, { tenant: 'b' });
  for (const authorization of [`Bearer ${TOKEN.slice(0, -1)}`, `bearer ${TOKEN}`, `Token ${TOKEN}`, TOKEN, `Bearer${TOKEN}`, 'Bearer ', `x Bearer ${TOKEN}`]) {
    assertRefused(await ask(server, { authorization }), 'unauthorized', authorization);
  }
  assertRefused(await ask(server, {}), 'unauthorized', 'no Authorization header');
  // a registry wins over a token: the single-user token selects no tenant
  const both = app({ tenants: registry, token: Buffer.from('s'.repeat(32)) });
  assertRefused(await ask(both, { authorization: `Bearer ${'s'.repeat(32)}` }), 'unauthorized', 'the single-user token beside a registry');
  assert.deepEqual((await ask(both, { authorization: `Bearer ${TOKEN}` })).body, { tenant: 'a' });
});
