import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../support/server.ts';
import { http } from '../support/http.ts';
import { connect } from 'node:net';
import { sample } from './prometheus-text.ts';

const TOKEN = 'm'.repeat(32);

describe('/metrics of a real server', () => {
  let server: TestServer;
  let metricsUrl: string;
  before(async () => {
    server = await startTestServer({ args: ['--metrics-port', '0'], env: { SERVICE_TOKEN: TOKEN } });
    metricsUrl = server.server.metricsUrl!;
  });
  after(() => server.close());

  const authorized = { headers: { authorization: `Bearer ${TOKEN}` } };
  const scrape = async () => {
    const response = await http('GET', metricsUrl);
    assert.equal(response.status, 200);
    assert.match(String(response.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    return response.text;
  };

  it('listens apart from the API, on the API host, and needs no token', async () => {
    assert.match(metricsUrl, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    assert.notEqual(new URL(metricsUrl).port, String(server.server.port));
    const text = await scrape();
    assert.match(text, /^# TYPE agentd_http_requests_total counter$/m);
  });

  it('counts real requests by route pattern and status, with a fixed label for unmatched paths', async () => {
    const before = await scrape();
    const counted = (text: string, route: string, status: string) => sample(text, 'agentd_http_requests_total', { route, status }) ?? 0;
    const created = await server.request('POST', '/v1/sessions', { ...authorized, body: {} });
    assert.equal(created.status, 201);
    for (let index = 0; index < 3; index++) assert.equal((await server.request('GET', `/v1/sessions/${created.json.id}`, authorized)).status, 200);
    assert.equal((await server.request('GET', '/v1/sessions/ses_doesnotexist', authorized)).status, 404);
    assert.equal((await server.request('GET', '/v1/sessions', {})).status, 401);
    assert.equal((await server.request('GET', '/no/such/path/12345', authorized)).status, 404);
    const afterwards = await scrape();
    assert.equal(counted(afterwards, '/v1/sessions', '201') - counted(before, '/v1/sessions', '201'), 1);
    assert.equal(counted(afterwards, '/v1/sessions/:id', '200') - counted(before, '/v1/sessions/:id', '200'), 3);
    assert.equal(counted(afterwards, '/v1/sessions/:id', '404') - counted(before, '/v1/sessions/:id', '404'), 1);
    assert.equal(counted(afterwards, '/v1/sessions', '401') - counted(before, '/v1/sessions', '401'), 1);
    assert.equal(counted(afterwards, 'unmatched', '404') - counted(before, 'unmatched', '404'), 1);
    // the raw URL (ids, unmatched paths) never becomes a label value
    assert.doesNotMatch(afterwards, /ses_doesnotexist|no\/such\/path|\/v1\/sessions\/ses_/);
  });

  it('times requests by route pattern too: one series per route, unmatched paths in one, never a raw id', async () => {
    const timed = (text: string, route: string) => sample(text, 'agentd_http_request_duration_seconds_count', { route }) ?? 0;
    const before = await scrape();
    const created = await server.request('POST', '/v1/sessions', { ...authorized, body: {} });
    for (let index = 0; index < 2; index++) assert.equal((await server.request('GET', `/v1/sessions/${created.json.id}`, authorized)).status, 200);
    for (const path of ['/nothing/here', `/v1/sessions/${created.json.id}/nothing`]) assert.equal((await server.request('GET', path, authorized)).status, 404);
    const afterwards = await scrape();
    assert.equal(timed(afterwards, '/v1/sessions') - timed(before, '/v1/sessions'), 1);
    assert.equal(timed(afterwards, '/v1/sessions/:id') - timed(before, '/v1/sessions/:id'), 2);
    assert.equal(timed(afterwards, 'unmatched') - timed(before, 'unmatched'), 2);
    assert.equal(sample(afterwards, 'agentd_http_request_duration_seconds_bucket', { route: '/v1/sessions/:id', le: '+Inf' }), timed(afterwards, '/v1/sessions/:id'));
    const routes = new Set([...afterwards.matchAll(/^agentd_http_request_duration_seconds_count\{route="([^"]*)"\}/gm)].map((match) => match[1]));
    assert.ok(!afterwards.includes(created.json.id), 'no id is a label value');
    for (const route of routes) assert.ok(route === 'unmatched' || /^\/[a-z0-9/:]*$/.test(route), route);
    assert.equal(sample(afterwards, 'agentd_http_request_duration_seconds_count'), undefined, 'no unlabelled series is left');
  });

  it('reports the scheduler gauges and the process metrics', async () => {
    const text = await scrape();
    assert.equal(sample(text, 'agentd_turns_running'), 0);
    assert.equal(sample(text, 'agentd_turns_queued'), 0);
    assert.notEqual(sample(text, 'process_resident_memory_bytes'), undefined);
  });

  it('answers only GET and HEAD /metrics there, and the API does not serve /metrics', async () => {
    assert.equal((await http('GET', metricsUrl.replace('/metrics', '/'))).status, 404);
    assert.equal((await http('POST', metricsUrl, { body: {} })).status, 405);
    const head = await http('HEAD', metricsUrl);
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    const onApi = await server.request('GET', '/metrics', authorized);
    assert.equal(onApi.status, 404);
    assert.equal(onApi.json.error.code, 'route_not_found');
  });

  it('stops listening when the server stops', async () => {
    const other = await startTestServer({ args: ['--metrics-port', '0'] });
    const url = other.server.metricsUrl!;
    assert.equal((await http('GET', url)).status, 200);
    await other.close();
    // a fresh connection, not one the client's keep-alive pool may still hold
    const refused = await new Promise<string>((resolve) => {
      const socket = connect(Number(new URL(url).port), '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve('connected')));
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    });
    assert.equal(refused, 'ECONNREFUSED');
  });
});

describe('a server without --metrics-port', () => {
  it('has no metrics listener', async () => {
    const server = await startTestServer();
    try {
      assert.equal(server.server.metricsUrl, null);
    } finally {
      await server.close();
    }
  });
});
