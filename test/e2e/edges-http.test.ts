import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { BACKENDS } from '../support/backends.ts';
import { startTestServer, waitForStatus, waitForTurn, type TestServer } from '../support/server.ts';
import type { FakeProvider } from '../support/fake-provider.ts';
import { useServerOnFakeProvider } from '../support/harness.ts';

const TOKEN = 'k'.repeat(40);
const UUIDV7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: any;
}

/** Writes bytes to the server as they are and parses the one response that comes back. */
function rawExchange(port: number, bytes: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      try {
        resolve(parseResponse(Buffer.concat(chunks).toString('utf8')));
      } catch (error) {
        reject(error);
      }
    });
    socket.end(bytes);
  });
}

function parseResponse(text: string): RawResponse {
  const headEnd = text.indexOf('\r\n\r\n');
  assert.ok(headEnd > 0, `no HTTP response in ${JSON.stringify(text.slice(0, 200))}`);
  const [statusLine, ...lines] = text.slice(0, headEnd).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
  const rawBody = text.slice(headEnd + 4);
  return { status: Number(statusLine.split(' ')[1]), headers, body: rawBody ? JSON.parse(rawBody) : undefined };
}

function assertEnvelope(response: RawResponse, status: number, code: string, label: string): void {
  assert.equal(response.status, status, `${label}: ${JSON.stringify(response.body)}`);
  assert.equal(response.body?.error?.code, code, label);
  assert.equal(typeof response.body.error.message, 'string', label);
  assert.match(response.headers['x-request-id'] ?? '', UUIDV7, label);
  assert.equal(response.body.error.requestId, response.headers['x-request-id'], label);
}

const request = (method: string, target: string, headers: string[]) => `${method} ${target} HTTP/1.1\r\n${headers.map((header) => `${header}\r\n`).join('')}Connection: close\r\n\r\n`;

/** Malformed requests a client (or an attacker probing the server) sends, with the answer each gets. */
const MALFORMED: { name: string; method: string; target: string; extra?: string[]; status: number; code: string }[] = [
  { name: 'undecodable percent-encoding', method: 'GET', target: '/v1/%ff%fe', status: 404, code: 'route_not_found' },
  { name: 'undecodable id', method: 'GET', target: '/v1/sessions/%ff%fe', status: 404, code: 'session_not_found' },
  { name: 'a turn id over 100 characters', method: 'GET', target: `/v1/turns/${'a'.repeat(150)}`, status: 404, code: 'turn_not_found' },
  { name: 'a session id of 5,000 characters', method: 'GET', target: `/v1/sessions/${'b'.repeat(5000)}/history`, status: 404, code: 'session_not_found' },
  { name: 'a 100 KB URL', method: 'GET', target: `/v1/sessions?filler=${'u'.repeat(100 * 1024)}`, status: 414, code: 'uri_too_long' },
  { name: 'a 100 KB path id', method: 'GET', target: `/v1/sessions/${'i'.repeat(100 * 1024)}`, status: 414, code: 'uri_too_long' },
  { name: 'a 20 KB header', method: 'GET', target: '/healthz', extra: [`X-Filler: ${'h'.repeat(20 * 1024)}`], status: 431, code: 'request_header_fields_too_large' },
  { name: 'the QUERY method', method: 'QUERY', target: '/v1/sessions', status: 404, code: 'route_not_found' },
  { name: 'the TRACE method', method: 'TRACE', target: '/v1/sessions', status: 404, code: 'route_not_found' },
  { name: 'the PROPFIND method', method: 'PROPFIND', target: '/v1/sessions', status: 404, code: 'route_not_found' },
];

describe('edges at the HTTP layer, loopback mode', () => {
  let server: TestServer;
  let host: string;
  before(async () => {
    server = await startTestServer({ args: ['--cors-origin', 'https://app.example.com'] });
    host = `Host: 127.0.0.1:${server.server.port}`;
  });
  after(async () => server.close());

  for (const edge of MALFORMED) {
    it(`answers ${edge.name} with ${edge.status} ${edge.code} in the envelope`, async () => {
      const response = await rawExchange(server.server.port, request(edge.method, edge.target, [host, ...(edge.extra ?? [])]));
      assertEnvelope(response, edge.status, edge.code, edge.name);
    });

    it(`checks Host and Origin before answering ${edge.name}`, async () => {
      const badHost = await rawExchange(server.server.port, request(edge.method, edge.target, ['Host: evil.example.com', ...(edge.extra ?? [])]));
      assertEnvelope(badHost, 403, 'invalid_host', `${edge.name} with a foreign Host`);
      const badOrigin = await rawExchange(server.server.port, request(edge.method, edge.target, [host, 'Origin: https://evil.example.com', ...(edge.extra ?? [])]));
      assertEnvelope(badOrigin, 403, 'origin_not_allowed', `${edge.name} from a foreign origin`);
    });
  }

  it('answers what Node cannot parse in the envelope too: an unknown method token, garbage, a 300 KB header', async () => {
    assertEnvelope(await rawExchange(server.server.port, request('FROBNICATE', '/v1/sessions', [host])), 404, 'route_not_found', 'unknown method');
    assertEnvelope(await rawExchange(server.server.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'), 400, 'malformed_request', 'header without a colon');
    const huge = await rawExchange(server.server.port, request('GET', '/healthz', [host, `X-Filler: ${'h'.repeat(300 * 1024)}`]));
    assertEnvelope(huge, 431, 'request_header_fields_too_large', 'beyond the parser limit');
  });

  it('serves a request next to the limits normally', async () => {
    const response = await rawExchange(server.server.port, request('GET', `/healthz?filler=${'u'.repeat(7000)}`, [host, `X-Filler: ${'h'.repeat(8000)}`]));
    assert.equal(response.status, 200);
  });
});

describe('edges at the HTTP layer, bearer mode', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ env: { SERVICE_TOKEN: TOKEN } });
  });
  after(async () => server.close());

  for (const edge of MALFORMED) {
    it(`refuses ${edge.name} without the token (401) and answers it with the token`, async () => {
      const extra = edge.extra ?? [];
      const anonymous = await rawExchange(server.server.port, request(edge.method, edge.target, ['Host: anywhere', ...extra]));
      assertEnvelope(anonymous, 401, 'unauthorized', `${edge.name} without a token`);
      const wrong = await rawExchange(server.server.port, request(edge.method, edge.target, ['Host: anywhere', `Authorization: Bearer ${'w'.repeat(40)}`, ...extra]));
      assertEnvelope(wrong, 401, 'unauthorized', `${edge.name} with a wrong token`);
      const admitted = await rawExchange(server.server.port, request(edge.method, edge.target, ['Host: anywhere', `Authorization: Bearer ${TOKEN}`, ...extra]));
      assertEnvelope(admitted, edge.status, edge.code, `${edge.name} with the token`);
    });
  }
});

describe('Retry-After on 429 and 503', () => {
  it('carries Retry-After on the subscriber limit and an empty catalog', async () => {
    const server = await startTestServer({ args: ['--max-event-subscribers', '1'], models: { connections: [], models: [] } });
    try {
      const host = `Host: 127.0.0.1:${server.server.port}`;
      const holder = connect(server.server.port, '127.0.0.1');
      holder.write(`GET /v1/events HTTP/1.1\r\n${host}\r\n\r\n`);
      await new Promise((resolve) => holder.once('data', resolve));
      const limited = await rawExchange(server.server.port, request('GET', '/v1/events', [host]));
      assertEnvelope(limited, 429, 'event_subscriber_limit', 'second subscriber');
      assert.equal(limited.headers['retry-after'], '5');
      holder.destroy();
      const empty = await server.request('POST', '/v1/sessions', { body: {} });
      assert.equal(empty.status, 503);
      assert.equal(empty.json.error.code, 'model_catalog_empty');
      assert.equal(empty.headers['retry-after'], '60');
    } finally {
      await server.close();
    }
  });
});

for (const backend of BACKENDS) {
  describe(`query filters and stopping on ${backend}`, () => {
    let fake!: FakeProvider;
    let server!: TestServer;
    const started = useServerOnFakeProvider({ backend });
    before(() => ({ fake, server } = started));

    it('answers a malformed sessionId or turnId filter with 400 invalid_query alike', async () => {
      for (const path of ['/v1/turns?sessionId=abc', '/v1/requests?turnId=bad', '/v1/turns?sessionId=', '/v1/events?sessionId=abc', '/v1/turns?sessionId=a&sessionId=b']) {
        const response = await server.request('GET', path);
        assert.equal(response.status, 400, path);
        assert.equal(response.json.error.code, 'invalid_query', path);
      }
      const session = (await server.request('POST', '/v1/sessions', { body: {} })).json;
      fake.enqueue({ kind: 'reply', text: 'done' });
      const turn = (await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'go' } })).json;
      await waitForTurn(server, turn.id);
      const other = (await server.request('POST', '/v1/sessions', { body: {} })).json;
      const listed = await server.request('GET', `/v1/turns?sessionId=${session.id.toUpperCase()}`);
      assert.deepEqual(listed.json.data.map((entry: { id: string }) => entry.id), [turn.id]);
      assert.deepEqual((await server.request('GET', `/v1/turns?sessionId=${other.id}`)).json.data, []);
    });

    it('answers a request completed while stopping with 503 server_stopping in the envelope, and closes its connection', async () => {
      const session = (await server.request('POST', '/v1/sessions', { body: {} })).json;
      const seen = fake.requests.length;
      fake.enqueue({ kind: 'hang', afterText: 'thinking' });
      const turn = (await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'long job' } })).json;
      await fake.waitForRequests(seen + 1);
      await waitForStatus(server, turn.id, 'running');
      // a request whose head is still arriving when the server begins to stop
      const socket = connect(server.server.port, '127.0.0.1');
      let received = '';
      socket.on('data', (chunk) => (received += chunk));
      const closed = new Promise((resolve) => socket.once('close', resolve));
      socket.write(`GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1:${server.server.port}\r\n`);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const stopping = server.stop();
      socket.write('\r\n');
      await closed;
      const response = parseResponse(received);
      assertEnvelope(response, 503, 'server_stopping', 'request while stopping');
      assert.equal(response.headers['retry-after'], '10');
      assert.equal(response.headers.connection, 'close');
      await stopping;
    });
  });
}
