// Regressions found by the contract fuzzer: the access checks (403) answer on every operation, and
// a body over --maximum-request-bytes is refused with 413 by every method but GET, even where the
// operation takes no body; /openapi.json must document both.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../support/server.ts';
import { isProtocolPath } from './support/contract-fuzz.ts';

describe('documented statuses the fuzzer reached', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ args: ['--maximum-request-bytes', '1024'] });
  });
  after(() => server.close());

  it('a refused Host is a 403 the document names for every operation', async () => {
    const document = (await server.request('GET', '/openapi.json')).json;
    const refused = await server.request('GET', '/healthz', { headers: { host: 'evil.example' } });
    assert.equal(refused.status, 403);
    for (const [path, item] of Object.entries<any>(document.paths)) {
      if (isProtocolPath(path)) continue;
      for (const [method, operation] of Object.entries<any>(item)) assert.ok(operation.responses['403'], `${method} ${path} documents 403`);
    }
  });

  it('an oversized body on a body-less DELETE or cancel is a documented 413', async () => {
    const document = (await server.request('GET', '/openapi.json')).json;
    const body = JSON.stringify({ padding: 'x'.repeat(2048) });
    for (const [method, path, documented] of [
      ['DELETE', '/v1/sessions/00000000-0000-0000-0000-000000000000', '/v1/sessions/{id}'],
      ['POST', '/v1/turns/00000000-0000-0000-0000-000000000000/cancel', '/v1/turns/{id}/cancel'],
      ['POST', '/v1/turns/00000000-0000-0000-0000-000000000000/revert', '/v1/turns/{id}/revert'],
    ]) {
      const answer = await server.request(method, path, { rawBody: body, headers: { 'content-type': 'application/json' } });
      assert.equal(answer.status, 413, `${method} ${path}`);
      assert.equal(answer.json.error.code, 'request_too_large');
      assert.ok(document.paths[documented][method.toLowerCase()].responses['413'], `${method} ${documented} documents 413`);
    }
  });
});
