import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { toApiError } from '../../src/http/error-reply.ts';
import { ListSessionsQuery } from '../../src/api/parameters.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

function subscribe(server: TestServer, path: string, headers: Record<string, string> = {}): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${server.url}${path}`, { headers }, resolve);
    req.on('error', reject);
    req.end();
  });
}

describe('query and header schemas', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => server.close());

  it('takes only plain decimal digits as an integer: what a number-coercing validator would accept is refused', async () => {
    for (const bad of ['1e1', '%205', '5%20', '0x10', '+5', '']) {
      const response = await server.request('GET', `/v1/sessions?limit=${bad}`);
      assert.equal(response.status, 400, bad);
      assert.equal(response.json.error.code, 'invalid_limit', bad);
      assert.equal(response.json.error.message, 'limit must be an integer from 1 to 100');
    }
    assert.equal((await server.request('GET', '/v1/sessions?limit=007')).status, 200);
    for (const bad of ['1e3', '%201']) {
      const response = await server.request('GET', '/v1/sessions/0190aaaa-0000-7000-8000-000000000000/history?cursor=' + bad);
      assert.equal(response.json.error.code, 'invalid_cursor', bad);
    }
  });

  it('ignores unknown query parameters, while a body still refuses unknown properties', async () => {
    const listed = await server.request('GET', '/v1/sessions?limit=2&unknown=1&archive=all&x[y]=z');
    assert.equal(listed.status, 200);
    assert.equal((await server.request('GET', '/v1/turns?whatever=abc')).status, 200);
    const created = await server.request('POST', '/v1/sessions', { body: { unknown: 1 } });
    assert.equal(created.status, 400);
    assert.equal(created.json.error.code, 'invalid_json');
  });

  it('answers a repeated parameter with its own code', async () => {
    for (const [path, code] of [
      ['/v1/sessions?archive=all&archive=active', 'invalid_archive_filter'],
      ['/v1/sessions?cursor=a&cursor=b', 'invalid_cursor'],
      ['/v1/requests?turnId=a&turnId=b', 'invalid_query'],
    ]) {
      const response = await server.request('GET', path);
      assert.equal(response.status, 400, path);
      assert.equal(response.json.error.code, code, path);
    }
  });

  it('validates Last-Event-ID as an integer and never reads the query copy when the header is present', async () => {
    for (const bad of ['1e3', '0x1', '9'.repeat(17)]) {
      const response = await server.request('GET', '/v1/events', { headers: { 'last-event-id': bad } });
      assert.equal(response.status, 400, bad);
      assert.equal(response.json.error.code, 'invalid_last_event_id', bad);
    }
    const headerWins = await subscribe(server, '/v1/events?lastEventId=abc', { 'last-event-id': '0' });
    headerWins.destroy();
    assert.equal(headerWins.statusCode, 200, 'the malformed query copy is ignored beside a header');
    const queryOnly = await server.request('GET', '/v1/events?lastEventId=abc');
    assert.equal(queryOnly.json.error.code, 'invalid_last_event_id');
  });
});

describe('parameter errors', () => {
  it('maps a failing query parameter or header to the code its route declares', () => {
    const validation = (instancePath: string, validationContext: string) => Object.assign(new Error('invalid'), { validation: [{ instancePath, keyword: 'type' }], validationContext });
    const errors = { querystring: ListSessionsQuery.errors, headers: { 'last-event-id': { code: 'invalid_last_event_id' as const, message: 'bad id' } } };
    assert.equal(toApiError(validation('/archive', 'querystring'), errors).code, 'invalid_archive_filter');
    assert.equal(toApiError(validation('/limit', 'querystring'), errors).code, 'invalid_limit');
    assert.equal(toApiError(validation('/last-event-id', 'headers'), errors).code, 'invalid_last_event_id');
    assert.equal(toApiError(validation('/other', 'querystring'), errors).code, 'invalid_query', 'an undeclared parameter falls back to invalid_query');
    assert.equal(toApiError(validation('/title', 'body'), errors).code, 'invalid_json', 'a body keeps its own code');
  });

  it('describes the parameters in /openapi.json from the same schemas', async () => {
    const server = await startTestServer();
    try {
      const document = (await server.request('GET', '/openapi.json')).json;
      const parameters = document.paths['/v1/sessions'].get.parameters;
      const limit = parameters.find((parameter: { name: string }) => parameter.name === 'limit');
      assert.deepEqual(limit, { name: 'limit', in: 'query', required: false, description: '1 to 100, default 50', schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 } });
      const header = document.paths['/v1/events'].get.parameters.find((parameter: { in: string }) => parameter.in === 'header');
      assert.equal(header.name, 'last-event-id');
    } finally {
      await server.close();
    }
  });
});
