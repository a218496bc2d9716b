import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PrometheusMetrics } from '../../src/telemetry/metrics.ts';
import { NO_METRICS } from '../../src/telemetry/recorder.ts';
import { sample } from './prometheus-text.ts';

describe('the metrics recorder', () => {
  it('exposes every metric of issue 16 under its exact name, before anything was recorded', async () => {
    const text = await new PrometheusMetrics({ processMetrics: false }).scrape();
    const names = [
      'agentd_http_requests_total', 'agentd_http_request_duration_seconds', 'agentd_turns_total', 'agentd_turns_running',
      'agentd_turns_queued', 'agentd_turn_duration_seconds', 'agentd_model_requests_total', 'agentd_model_request_duration_seconds',
      'agentd_tokens_total', 'agentd_tool_calls_total', 'agentd_human_requests_pending', 'agentd_event_subscribers', 'agentd_events_dropped_total',
    ];
    for (const name of names) assert.match(text, new RegExp(`^# TYPE ${name} `, 'm'), name);
    assert.match(text, /^# TYPE agentd_http_request_duration_seconds histogram$/m);
    assert.match(text, /^# TYPE agentd_turn_duration_seconds histogram$/m);
    assert.match(text, /^# TYPE agentd_model_request_duration_seconds histogram$/m);
  });

  it('counts HTTP requests by route and status and observes their duration', async () => {
    const metrics = new PrometheusMetrics({ processMetrics: false });
    metrics.httpRequestFinished('/v1/sessions/:id', 200, 0.002);
    metrics.httpRequestFinished('/v1/sessions/:id', 200, 0.003);
    metrics.httpRequestFinished('/v1/sessions/:id', 404, 0.001);
    const text = await metrics.scrape();
    assert.equal(sample(text, 'agentd_http_requests_total', { route: '/v1/sessions/:id', status: '200' }), 2);
    assert.equal(sample(text, 'agentd_http_requests_total', { route: '/v1/sessions/:id', status: '404' }), 1);
    const route = '/v1/sessions/:id';
    assert.equal(sample(text, 'agentd_http_request_duration_seconds_count', { route }), 3);
    assert.equal(sample(text, 'agentd_http_request_duration_seconds_bucket', { route, le: '0.001' }), 1);
    assert.equal(sample(text, 'agentd_http_request_duration_seconds_bucket', { route, le: '+Inf' }), 3);
    assert.ok(Math.abs(sample(text, 'agentd_http_request_duration_seconds_sum', { route })! - 0.006) < 1e-9);
    metrics.httpRequestFinished('unmatched', 404, 0.0001);
    const later = await metrics.scrape();
    assert.equal(sample(later, 'agentd_http_request_duration_seconds_count', { route: 'unmatched' }), 1);
    assert.equal(sample(later, 'agentd_http_request_duration_seconds_count', { route }), 3, "one route's series is its own");
  });

  it('records turns, model requests in two phases, tokens by kind, tool calls and the gauges', async () => {
    const metrics = new PrometheusMetrics({ processMetrics: false });
    let counts = { running: 2, queued: 5 };
    metrics.observeTurnQueue(() => counts);
    metrics.observeEventSubscribers(() => 7);
    metrics.turnFinished('completed', 3);
    metrics.turnFinished('failed', 1);
    metrics.turnFinished('completed', 2);
    metrics.modelRequestFinished('openai', 'ok', 0.4, 2);
    metrics.modelRequestFinished('openai', 'error', null, 0.1);
    metrics.tokensUsed({ input: 100, output: 20, cached: 0 });
    metrics.tokensUsed({ input: 50, output: 5, cached: 30 });
    metrics.toolCallFinished('shell', 'ok');
    metrics.toolCallFinished('mcp__docs__search', 'denied');
    metrics.humanRequestOpened();
    metrics.humanRequestOpened();
    metrics.humanRequestClosed();
    metrics.eventsDropped();
    metrics.eventsDropped(2);
    let text = await metrics.scrape();
    assert.equal(sample(text, 'agentd_turns_total', { status: 'completed' }), 2);
    assert.equal(sample(text, 'agentd_turns_total', { status: 'failed' }), 1);
    assert.equal(sample(text, 'agentd_turn_duration_seconds_count'), 3);
    assert.equal(sample(text, 'agentd_model_requests_total', { provider: 'openai', status: 'ok' }), 1);
    assert.equal(sample(text, 'agentd_model_requests_total', { provider: 'openai', status: 'error' }), 1);
    // the failed request never got a first byte: only the "end" phase has both
    assert.equal(sample(text, 'agentd_model_request_duration_seconds_count', { phase: 'first_byte' }), 1);
    assert.equal(sample(text, 'agentd_model_request_duration_seconds_count', { phase: 'end' }), 2);
    assert.equal(sample(text, 'agentd_tokens_total', { kind: 'input' }), 150);
    assert.equal(sample(text, 'agentd_tokens_total', { kind: 'output' }), 25);
    assert.equal(sample(text, 'agentd_tokens_total', { kind: 'cached' }), 30);
    assert.equal(sample(text, 'agentd_tool_calls_total', { tool: 'shell', outcome: 'ok' }), 1);
    assert.equal(sample(text, 'agentd_tool_calls_total', { tool: 'mcp__docs__search', outcome: 'denied' }), 1);
    assert.equal(sample(text, 'agentd_human_requests_pending'), 1);
    assert.equal(sample(text, 'agentd_events_dropped_total'), 3);
    assert.equal(sample(text, 'agentd_turns_running'), 2);
    assert.equal(sample(text, 'agentd_turns_queued'), 5);
    assert.equal(sample(text, 'agentd_event_subscribers'), 7);
    // the gauges are read at scrape time
    counts = { running: 0, queued: 1 };
    text = await metrics.scrape();
    assert.equal(sample(text, 'agentd_turns_running'), 0);
    assert.equal(sample(text, 'agentd_turns_queued'), 1);
  });

  it('labels turn and token counters by tenant only in multi-tenant mode', async () => {
    const single = new PrometheusMetrics({ processMetrics: false });
    single.turnFinished('completed', 1, 'acme');
    assert.equal(sample(await single.scrape(), 'agentd_turns_total', { status: 'completed' }), 1);

    const multi = new PrometheusMetrics({ processMetrics: false, perTenant: true });
    multi.turnFinished('completed', 1, 'acme');
    multi.turnFinished('completed', 1, 'globex');
    multi.turnFinished('completed', 1, 'acme');
    multi.tokensUsed({ input: 10, output: 1, cached: 0 }, 'globex');
    const text = await multi.scrape();
    assert.equal(sample(text, 'agentd_turns_total', { status: 'completed', tenant: 'acme' }), 2);
    assert.equal(sample(text, 'agentd_turns_total', { status: 'completed', tenant: 'globex' }), 1);
    assert.equal(sample(text, 'agentd_tokens_total', { kind: 'input', tenant: 'globex' }), 10);
    assert.equal(sample(text, 'agentd_turns_total', { status: 'completed' }), undefined);
  });

  it('includes the default process metrics', async () => {
    const text = await new PrometheusMetrics().scrape();
    assert.notEqual(sample(text, 'process_cpu_user_seconds_total'), undefined);
    assert.match(text, /^nodejs_eventloop_lag_seconds /m);
  });

  it('keeps each server\'s metrics in a registry of its own', async () => {
    const first = new PrometheusMetrics({ processMetrics: false });
    const second = new PrometheusMetrics({ processMetrics: false });
    first.httpRequestFinished('/healthz', 200, 0.001);
    assert.equal(sample(await second.scrape(), 'agentd_http_requests_total', { route: '/healthz', status: '200' }), undefined);
  });

  it('off, every recording is a no-op on a frozen object', () => {
    assert.equal(NO_METRICS.enabled, false);
    assert.ok(Object.isFrozen(NO_METRICS));
    NO_METRICS.httpRequestFinished('/healthz', 200, 0.001);
    NO_METRICS.turnFinished('completed', 1);
  });
});
