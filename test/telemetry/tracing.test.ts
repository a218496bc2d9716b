import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { OtelTracing } from '../../src/telemetry/otel-tracing.ts';
import { NO_TRACING, SPAN_ATTRIBUTE_NAMES, modelRequestAttributes, modelResponseAttributes, otlpTarget, spanNames, toolCallAttributes, turnAttributes, type SpanAttributes } from '../../src/telemetry/tracing.ts';

const PROMPT = 'please refactor the billing module, the secret is hunter2';

function tracingToMemory() {
  const exporter = new InMemorySpanExporter();
  const tracing = new OtelTracing({ serviceName: 'agentd-test', serviceVersion: '0.0.0', exporter, batch: false });
  return { exporter, tracing };
}

const byName = (spans: ReadableSpan[], name: string) => {
  const found = spans.find((span) => span.name === name);
  assert.ok(found, `no span ${name} among ${spans.map((span) => span.name).join(', ')}`);
  return found;
};

describe('tracing helpers', () => {
  it('builds a turn → model request + tool call tree through the async context, continuing a client traceparent', async () => {
    const { exporter, tracing } = tracingToMemory();
    const clientTrace = '0af7651916cd43dd8448eb211c80319c';
    const clientSpan = 'b7ad6b7169203331';
    const parent = tracing.parentFromHeaders({ traceparent: `00-${clientTrace}-${clientSpan}-01` });
    assert.ok(parent);

    await tracing.withSpan(spanNames.turn, turnAttributes('ses_1', 'turn_1'), async (turn) => {
      await tracing.withSpan(spanNames.modelRequest('gpt-test'), modelRequestAttributes('openai', 'gpt-test'), async (model) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        // a careless caller tries to attach the prompt and the output: the allow-list drops them
        model.setAttributes({ ...modelResponseAttributes({ inputTokens: 120, outputTokens: 30 }, ['tool_calls']), 'gen_ai.prompt': PROMPT, 'gen_ai.completion': PROMPT } as SpanAttributes);
      }, { kind: 'client' });
      await tracing.withSpan(spanNames.toolCall('shell'), toolCallAttributes('shell', 'call_1'), async (tool) => {
        tool.setAttributes({ 'agentd.tool.outcome': 'ok', 'gen_ai.tool.call.arguments': PROMPT } as SpanAttributes);
      });
      turn.setAttributes({ 'agentd.turn.status': 'completed' });
    }, { parent });

    const spans = exporter.getFinishedSpans();
    assert.equal(spans.length, 3);
    const turn = byName(spans, 'agentd.turn');
    const model = byName(spans, 'chat gpt-test');
    const tool = byName(spans, 'execute_tool shell');
    for (const span of spans) assert.equal(span.spanContext().traceId, clientTrace);
    assert.equal(turn.parentSpanContext?.spanId, clientSpan);
    assert.equal(model.parentSpanContext?.spanId, turn.spanContext().spanId);
    assert.equal(tool.parentSpanContext?.spanId, turn.spanContext().spanId);

    assert.deepEqual(model.attributes, {
      'gen_ai.operation.name': 'chat', 'gen_ai.system': 'openai', 'gen_ai.request.model': 'gpt-test',
      'gen_ai.usage.input_tokens': 120, 'gen_ai.usage.output_tokens': 30, 'gen_ai.response.finish_reasons': ['tool_calls'],
    });
    assert.deepEqual(tool.attributes, { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'shell', 'gen_ai.tool.call.id': 'call_1', 'agentd.tool.outcome': 'ok' });
    assert.deepEqual(turn.attributes, { 'agentd.session.id': 'ses_1', 'agentd.turn.id': 'turn_1', 'agentd.turn.status': 'completed' });
    for (const span of spans) for (const name of Object.keys(span.attributes)) assert.ok((SPAN_ATTRIBUTE_NAMES as readonly string[]).includes(name), name);
    assert.doesNotMatch(JSON.stringify(spans.map((span) => ({ name: span.name, attributes: span.attributes, events: span.events, status: span.status }))), /hunter2|billing/);
    await tracing.shutdown();
  });

  it('marks a failed span with the error type only, never the message, and rethrows', async () => {
    const { exporter, tracing } = tracingToMemory();
    const failure = Object.assign(new Error(`provider said: ${PROMPT}`), { code: 'model_unavailable' });
    await assert.rejects(tracing.withSpan(spanNames.turn, {}, async () => { throw failure; }), failure);
    const [span] = exporter.getFinishedSpans();
    assert.equal(span.status.code, 2);
    assert.equal(span.status.message, undefined);
    assert.equal(span.attributes['error.type'], 'model_unavailable');
    assert.doesNotMatch(JSON.stringify({ attributes: span.attributes, events: span.events, status: span.status }), /hunter2/);
  });

  it('starts a root span without a parent, and links spans begun in one place and ended in another', async () => {
    const { exporter, tracing } = tracingToMemory();
    const request = tracing.startSpan('POST /v1/sessions/:id/turns', { 'http.request.method': 'POST' }, { kind: 'server' });
    await tracing.withSpan(spanNames.turn, {}, async () => {}, { parent: request.asParent });
    request.end();
    const spans = exporter.getFinishedSpans();
    const http = byName(spans, 'POST /v1/sessions/:id/turns');
    assert.equal(http.parentSpanContext, undefined);
    assert.equal(byName(spans, 'agentd.turn').parentSpanContext?.spanId, http.spanContext().spanId);
  });

  it('ignores a malformed or absent traceparent', () => {
    const { tracing } = tracingToMemory();
    for (const header of ['', 'garbage', '00-00000000000000000000000000000000-b7ad6b7169203331-01', '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01', 'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01']) {
      assert.equal(tracing.parentFromHeaders({ traceparent: header }), undefined, header);
    }
    assert.equal(tracing.parentFromHeaders({}), undefined);
  });

  it('off, a span is a direct call of the function', async () => {
    assert.equal(NO_TRACING.enabled, false);
    assert.equal(await NO_TRACING.withSpan('x', {}, () => 42), 42);
    assert.equal(NO_TRACING.parentFromHeaders({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }), undefined);
  });
});

describe('the OTEL_* switch', () => {
  it('is off without an endpoint, or when disabled', () => {
    assert.equal(otlpTarget({}), null);
    assert.equal(otlpTarget({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }), null);
    assert.equal(otlpTarget({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }), null);
  });

  it('appends /v1/traces to the base endpoint and takes the traces endpoint as given', () => {
    assert.equal(otlpTarget({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })!.url, 'http://collector:4318/v1/traces');
    assert.equal(otlpTarget({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/custom' })!.url, 'https://b/custom');
  });

  it('parses headers and the service name', () => {
    const target = otlpTarget({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20abc, x-team=core', OTEL_SERVICE_NAME: 'agentd-prod' })!;
    assert.deepEqual(target.headers, { authorization: 'Bearer abc', 'x-team': 'core' });
    assert.equal(target.serviceName, 'agentd-prod');
    assert.equal(otlpTarget({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })!.serviceName, 'agentd');
  });

  it('refuses a malformed endpoint or header list with a one-line error naming the variable, never the value', () => {
    assert.throws(() => otlpTarget({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' }), /^Error: OTEL_EXPORTER_OTLP_ENDPOINT: not a URL$/);
    assert.throws(() => otlpTarget({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'ftp://c/x' }), /OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: must be an http/);
    assert.throws(() => otlpTarget({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_EXPORTER_OTLP_HEADERS: 'secret-token-value' }), (error: Error) => /OTEL_EXPORTER_OTLP_HEADERS: expected key=value/.test(error.message) && !error.message.includes('secret-token-value'));
  });
});
