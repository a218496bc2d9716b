/**
 * Which requests a single-user server logs at info (docs/OPERATIONS.md, "Logs"): the refused and
 * failed ones; the rest at debug. Multi-tenant hosting logs every request at info, with its
 * tenant (test/e2e/tenants-isolation.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestServer, type TestServer } from '../support/server.ts';

interface RequestLine {
  level: number;
  reqId: string;
  method: string;
  route: string;
  status: number;
  ms: number;
}

function requestLines(server: TestServer): RequestLine[] {
  return server.logs().map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request');
}

/** The server writes a request's line once the response has finished; the client may read it first. */
async function lineFor(server: TestServer, requestId: string): Promise<RequestLine | undefined> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const line = requestLines(server).find((entry) => entry.reqId === requestId);
    if (line) return line;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return undefined;
}

for (const level of ['info', 'debug'] as const) {
  describe(`a single-user server at log level ${level}`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ captureLogs: true, captureLevel: level });
    });
    after(() => server.close());

    test(`logs a successful request ${level === 'debug' ? 'at debug' : 'not at all'}`, async () => {
      const created = await server.request('POST', '/v1/sessions', { body: {} });
      const read = await server.request('GET', `/v1/sessions/${created.json.id}`);
      assert.equal(read.status, 200);
      const line = await lineFor(server, String(read.headers['x-request-id']));
      if (level === 'info') {
        assert.equal(line, undefined);
        assert.equal(await lineFor(server, String(created.headers['x-request-id'])), undefined);
      } else {
        assert.ok(line, 'the GET has its line');
        assert.equal(line.level, 20);
        assert.deepEqual([line.method, line.route, line.status], ['GET', '/v1/sessions/:id', 200]);
      }
    });

    test('logs refused and unknown requests at info, with the route pattern, never the path sent', async () => {
      const missing = await server.request('GET', '/v1/sessions/00000000-0000-7000-8000-000000000000');
      assert.equal(missing.status, 404);
      const unmatched = await server.request('GET', '/v1/no-such-thing?token=secret-looking');
      assert.equal(unmatched.status, 404);
      const invalid = await server.request('POST', '/v1/sessions', { body: { unknownField: true } });
      assert.equal(invalid.status, 400);
      const lines = await Promise.all([missing, unmatched, invalid].map((response) => lineFor(server, String(response.headers['x-request-id']))));
      assert.deepEqual(
        lines.map((line) => line && [line.level, line.method, line.route, line.status]),
        [
          [30, 'GET', '/v1/sessions/:id', 404],
          [30, 'GET', 'unmatched', 404],
          [30, 'POST', '/v1/sessions', 400],
        ],
      );
      assert.ok(!server.logs().join('\n').includes('secret-looking'), 'the query string sent is not logged');
      assert.ok(!server.logs().join('\n').includes('no-such-thing'), 'nor the path sent');
    });
  });
}
