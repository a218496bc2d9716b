import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../support/server.ts';
import { startCollector } from './otlp-collector.ts';

const TOKEN = 'o'.repeat(32);
const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';

describe('HTTP request spans to an OTLP collector', () => {
  it('exports one server span per request, continuing the client\'s traceparent, with no token or body in it', async () => {
    const collector = await startCollector();
    const server = await startTestServer({
      env: { SERVICE_TOKEN: TOKEN, OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint, OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=k1', OTEL_SERVICE_NAME: 'agentd-under-test' },
    });
    try {
      const authorization = `Bearer ${TOKEN}`;
      const created = await server.request('POST', '/v1/sessions', {
        headers: { authorization, traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` },
        body: { title: 'secret project codename-zebra' },
      });
      assert.equal(created.status, 201);
      assert.equal((await server.request('GET', `/v1/sessions/${created.json.id}`, { headers: { authorization } })).status, 200);
      assert.equal((await server.request('GET', '/nowhere', { headers: { authorization } })).status, 404);
      assert.equal((await server.request('GET', '/v1/sessions', {})).status, 401);
    } finally {
      // stopping flushes the batch of spans
      await server.close();
    }
    try {
      const post = collector.spans.find((span) => span.name === 'POST /v1/sessions');
      assert.ok(post, collector.spans.map((span) => span.name).join(', '));
      assert.equal(post.traceId, CLIENT_TRACE);
      assert.equal(post.parentSpanId, CLIENT_SPAN);
      assert.deepEqual(post.attributes, { 'http.request.method': 'POST', 'http.route': '/v1/sessions', 'http.response.status_code': 201 });
      assert.equal(post.resource['service.name'], 'agentd-under-test');

      const get = collector.spans.find((span) => span.name === 'GET /v1/sessions/:id');
      assert.ok(get);
      assert.notEqual(get.traceId, CLIENT_TRACE, 'a request without traceparent starts its own trace');
      assert.equal(get.parentSpanId, '');
      assert.equal(collector.spans.find((span) => span.name === 'GET unmatched')?.attributes['http.response.status_code'], 404);
      // refused by the access checks, still traced
      assert.equal(collector.spans.find((span) => span.name === 'GET /v1/sessions')?.attributes['http.response.status_code'], 401);

      assert.equal(collector.headers[0]['x-collector-key'], 'k1');
      const everything = collector.bodies.join('\n');
      assert.doesNotMatch(everything, new RegExp(TOKEN));
      assert.doesNotMatch(everything, /codename-zebra|Bearer/);
    } finally {
      await collector.close();
    }
  });
});
