import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import SwaggerParser from '@apidevtools/swagger-parser';
import { startTestServer, type TestServer } from '../support/server.ts';
import { http } from '../support/http.ts';

const TOKEN = 'x'.repeat(40);
const UUIDV7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('loopback mode without a token', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ args: ['--cors-origin', 'https://app.example.com', '--maximum-request-bytes', '2048'] });
  });
  after(async () => server.close());

  it('answers health, readiness and the description with the standard headers', async () => {
    const health = await server.request('GET', '/healthz');
    assert.equal(health.status, 200);
    assert.deepEqual(health.json, { ok: true });
    assert.match(String(health.headers['x-request-id']), UUIDV7);
    assert.equal(health.headers['cache-control'], 'no-store');
    assert.equal(health.headers['x-content-type-options'], 'nosniff');
    const ready = await server.request('GET', '/readyz');
    assert.deepEqual([ready.status, ready.json], [200, { ready: true, instance: ready.json.instance }]);
    assert.match(ready.json.instance, new RegExp(`-${process.pid}-[0-9a-f]{6}$`), 'the default instance id: host name, pid and a random suffix');
  });

  it('accepts each loopback Host spelling and refuses any other (403 invalid_host)', async () => {
    for (const host of [`127.0.0.1:${server.server.port}`, `localhost:${server.server.port}`, `LOCALHOST:${server.server.port}`]) {
      assert.equal((await server.request('GET', '/healthz', { headers: { host } })).status, 200, host);
    }
    for (const host of ['evil.example.com', `evil.example.com:${server.server.port}`, '127.0.0.1', `127.0.0.1:${server.server.port + 1}`]) {
      const response = await server.request('GET', '/healthz', { headers: { host } });
      assert.equal(response.status, 403, host);
      assert.equal(response.json.error.code, 'invalid_host');
      assert.equal(response.json.error.requestId, response.headers['x-request-id']);
    }
  });

  it('refuses a Host-less request', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: server.server.port, path: '/healthz', setHost: false }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(status, 403);
  });

  it('checks the Origin before routing, and answers an allowed preflight with 204', async () => {
    const refused = await server.request('GET', '/nowhere', { headers: { origin: 'https://evil.example.com' } });
    assert.equal(refused.status, 403);
    assert.equal(refused.json.error.code, 'origin_not_allowed');
    const almost = await server.request('GET', '/healthz', { headers: { origin: 'https://app.example.com/' } });
    assert.equal(almost.status, 403);
    const preflight = await server.request('OPTIONS', '/v1/sessions', { headers: { origin: 'https://app.example.com' } });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.text, '');
    assert.equal(preflight.headers['access-control-allow-origin'], 'https://app.example.com');
    assert.equal(preflight.headers['access-control-allow-methods'], 'GET, POST, PATCH, DELETE, OPTIONS');
    assert.equal(preflight.headers['access-control-allow-headers'], 'Authorization, Content-Type, Last-Event-ID');
    assert.equal(preflight.headers['access-control-max-age'], '600');
    assert.equal(preflight.headers.vary, 'Origin');
    const error = await server.request('GET', '/v1/sessions/nope', { headers: { origin: 'https://app.example.com' } });
    assert.equal(error.status, 404);
    assert.equal(error.headers['access-control-allow-origin'], 'https://app.example.com');
  });

  it('lets a page of an allowed origin read X-Request-ID and Retry-After (Access-Control-Expose-Headers), errors included', async () => {
    const origin = { origin: 'https://app.example.com' };
    const ok = await server.request('GET', '/healthz', { headers: origin });
    const refused = await server.request('POST', '/v1/sessions', { body: { title: 5 }, headers: origin });
    for (const response of [ok, refused]) {
      assert.equal(response.headers['access-control-expose-headers'], 'X-Request-ID, Retry-After');
      assert.match(String(response.headers['x-request-id']), UUIDV7);
    }
    // a request without an Origin is not a browser's cross-origin one: no CORS headers at all
    assert.equal((await server.request('GET', '/healthz')).headers['access-control-expose-headers'], undefined);
  });

  it('answers unknown paths and methods with 404 route_not_found', async () => {
    for (const [method, path] of [['GET', '/v2/sessions'], ['PUT', '/v1/sessions'], ['DELETE', '/healthz'], ['OPTIONS', '/v1/sessions']]) {
      const response = await server.request(method, path);
      assert.equal(response.status, 404, `${method} ${path}`);
      assert.equal(response.json.error.code, 'route_not_found');
    }
  });

  it('orders body errors 415, then 413, then 400', async () => {
    const big = JSON.stringify({ title: 'y'.repeat(4096) });
    const wrongType = await server.request('POST', '/v1/sessions', { rawBody: big, headers: { 'content-type': 'text/plain' } });
    assert.equal(wrongType.status, 415);
    assert.equal(wrongType.json.error.code, 'unsupported_media_type');
    const missingType = await server.request('POST', '/v1/sessions', { rawBody: '{}' });
    assert.equal(missingType.status, 415);
    const tooLarge = await server.request('POST', '/v1/sessions', { rawBody: big + '{', headers: { 'content-type': 'application/json' } });
    assert.equal(tooLarge.status, 413);
    assert.equal(tooLarge.json.error.code, 'request_too_large');
    const malformed = await server.request('POST', '/v1/sessions', { rawBody: '{"title":', headers: { 'content-type': 'Application/JSON; charset=utf-8' } });
    assert.equal(malformed.status, 400);
    assert.equal(malformed.json.error.code, 'invalid_json');
    const wrongShape = await server.request('POST', '/v1/sessions', { body: { title: 5 } });
    assert.equal(wrongShape.status, 400);
    assert.equal(wrongShape.json.error.details[0].path, '/title');
    const notObject = await server.request('POST', '/v1/sessions', { body: [1] });
    assert.equal(notObject.status, 400);
  });

  it('enforces --maximum-request-bytes at the limit and one past it', async () => {
    const bodyOfSize = (size: number) => {
      const skeleton = JSON.stringify({ title: '' });
      return JSON.stringify({ title: 'z'.repeat(size - skeleton.length) });
    };
    const atLimit = await server.request('POST', '/v1/sessions', { rawBody: bodyOfSize(2048), headers: { 'content-type': 'application/json' } });
    assert.equal(atLimit.status, 400, 'at the limit the body is read (and the 512-char title rule answers)');
    assert.equal(atLimit.json.error.code, 'invalid_json');
    const pastLimit = await server.request('POST', '/v1/sessions', { rawBody: bodyOfSize(2049), headers: { 'content-type': 'application/json' } });
    assert.equal(pastLimit.status, 413);
  });

  it('checks the streamed size too, when Content-Length is absent', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: server.server.port, path: '/v1/sessions', method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', () => resolve(413));
      for (let index = 0; index < 10; index++) req.write('{"title":"' + 'q'.repeat(500));
      req.end();
      void reject;
    });
    assert.equal(status, 413);
  });

  it('accepts path UUIDs in any case', async () => {
    const { json: session } = await server.request('POST', '/v1/sessions', { body: {} });
    const upper = await server.request('GET', `/v1/sessions/${session.id.toUpperCase()}`);
    assert.equal(upper.status, 200);
    assert.equal(upper.json.id, session.id);
  });

  it('serves an OpenAPI 3.1 document with 17 paths and 17 named schemas that a validator accepts, and the extension paths marked', async () => {
    const response = await server.request('GET', '/openapi.json');
    assert.equal(response.status, 200);
    const document = response.json;
    assert.equal(document.openapi, '3.1.0');
    // SPEC.md's 17, the extension of CONTRACT.md §20 and the protocol paths of §22 (/acp, /mcp)
    const extensions = ['/v1/turns/{id}/revert', '/acp', '/mcp'];
    assert.equal(Object.keys(document.paths).length, 17 + extensions.length);
    for (const path of extensions) assert.ok(Object.values<any>(document.paths[path]).every((operation) => operation['x-agentd-extension'] === true), path);
    assert.ok(Object.entries<any>(document.paths).every(([path, item]) => extensions.includes(path) || Object.values<any>(item).every((operation) => !('x-agentd-extension' in operation))));
    const names = Object.keys(document.components.schemas);
    assert.equal(names.length, 17);
    for (const required of ['Model', 'Session', 'SessionPage', 'CreateSession', 'PatchSession', 'ForkSession', 'CreateTurn', 'Turn', 'TurnResult', 'TurnOutput', 'TurnCompletion', 'Agent', 'HumanRequest', 'ResolveRequest', 'ErrorEnvelope', 'HistoryPage']) {
      assert.ok(names.includes(required), required);
    }
    await SwaggerParser.validate(structuredClone(document));
    assert.equal(document.components.schemas.SessionPage.properties.data.items.$ref, '#/components/schemas/Session');
  });

  it('lists the models of the catalog', async () => {
    const response = await server.request('GET', '/v1/models');
    assert.equal(response.status, 200);
    assert.deepEqual(response.json.data.map((model: { id: string }) => model.id), ['test-model', 'plain-model']);
    assert.deepEqual(response.json.data[0], {
      id: 'test-model', provider: 'local', connection: 'local', transportModel: 'test-transport', dialect: 'openai-responses',
      label: 'Test', contextWindow: 32768, efforts: ['none', 'low', 'medium', 'high'], defaultEffort: 'medium',
    });
  });
});

describe('bearer mode', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ env: { SERVICE_TOKEN: TOKEN } });
  });
  after(async () => server.close());

  it('requires the exact Authorization header on every path, health included', async () => {
    for (const path of ['/healthz', '/readyz', '/openapi.json', '/v1/models', '/nowhere']) {
      const response = await server.request('GET', path);
      assert.equal(response.status, 401, path);
      assert.equal(response.json.error.code, 'unauthorized');
      assert.ok(!response.text.includes(TOKEN));
    }
    for (const header of [`bearer ${TOKEN}`, `Bearer  ${TOKEN}`, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(1)}`, TOKEN]) {
      assert.equal((await server.request('GET', '/healthz', { headers: { authorization: header } })).status, 401, header);
    }
    const ok = await server.request('GET', '/healthz', { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(ok.status, 200);
    const unknown = await server.request('GET', '/nowhere', { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(unknown.json.error.code, 'route_not_found');
  });

  it('does not check Host and never reads a token from the query string', async () => {
    const anyHost = await server.request('GET', '/healthz', { headers: { authorization: `Bearer ${TOKEN}`, host: 'agentd.internal' } });
    assert.equal(anyHost.status, 200);
    const query = await server.request('GET', `/healthz?access_token=${TOKEN}`);
    assert.equal(query.status, 401);
  });
});

describe('readiness', () => {
  it('answers 503 store_unavailable when PostgreSQL is gone', async () => {
    const server = await startTestServer({ backend: 'postgres' });
    try {
      assert.equal((await server.request('GET', '/readyz')).status, 200);
      await server.backend.drop();
      const response = await server.request('GET', '/readyz');
      assert.equal(response.status, 503);
      assert.equal(response.json.error.code, 'store_unavailable');
      assert.equal((await server.request('GET', '/healthz')).status, 200);
    } finally {
      await server.stop();
    }
  });
});

void http;
