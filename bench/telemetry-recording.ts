/**
 * What recording costs the turn path, in-process and within one run: a provider attempt of three
 * events through the bare adapter and through the instrumented one (metrics on, tracing off), and
 * one tool call through recordToolCall with and without metrics.
 *
 *   node --import tsx bench/telemetry-recording.ts        (BENCH_ITERATIONS, default 200,000)
 */
import type { ProviderAdapter, ProviderEvent } from '../src/agent/providers/types.ts';
import type { CatalogModel } from '../src/config/models-file.ts';
import { PrometheusMetrics } from '../src/telemetry/metrics.ts';
import { instrumentedAdapter } from '../src/telemetry/model-requests.ts';
import { NO_TELEMETRY, recordToolCall, type RuntimeTelemetry } from '../src/telemetry/runtime-telemetry.ts';
import { NO_TRACING } from '../src/telemetry/tracing.ts';

const iterations = Number(process.env.BENCH_ITERATIONS ?? 200_000);
const events: ProviderEvent[] = [
  { type: 'text.delta', text: 'hello' },
  { type: 'text.delta', text: ' world' },
  { type: 'response.done', responseId: 'r', model: 'm', usage: { inputTokens: 10, outputTokens: 2, cachedTokens: 0, cacheCreationTokens: null, reasoningTokens: null, webSearchRequests: null }, completion: { status: 'completed' }, stopReason: 'stop' },
] as ProviderEvent[];
const bare: ProviderAdapter = {
  dialect: 'openai-responses',
  async *stream() {
    yield* events;
  },
};
const model = { provider: 'bench', transportModel: 'bench-model' } as CatalogModel;
const measured: RuntimeTelemetry = { metrics: new PrometheusMetrics({ perTenant: false }), tracing: NO_TRACING };
const signal = new AbortController().signal;

async function attempts(adapter: ProviderAdapter): Promise<number> {
  const started = performance.now();
  for (let index = 0; index < iterations; index++) for await (const _event of adapter.stream({} as never, signal));
  return ((performance.now() - started) * 1e6) / iterations;
}

async function toolCalls(telemetry: RuntimeTelemetry): Promise<number> {
  const started = performance.now();
  for (let index = 0; index < iterations; index++) await recordToolCall(telemetry, { name: 'shell', callId: 'c' }, signal, async () => ({ result: 1, outcome: 'ok' }));
  return ((performance.now() - started) * 1e6) / iterations;
}

for (let round = 0; round < 2; round++) {
  const plain = await attempts(bare);
  const instrumented = await attempts(instrumentedAdapter(bare, model, measured));
  const toolOff = await toolCalls(NO_TELEMETRY);
  const toolOn = await toolCalls(measured);
  console.log(`round ${round + 1}: provider attempt ${plain.toFixed(0)} ns bare, ${instrumented.toFixed(0)} ns instrumented (+${(instrumented - plain).toFixed(0)} ns); tool call ${toolOff.toFixed(0)} ns without metrics, ${toolOn.toFixed(0)} ns with (+${(toolOn - toolOff).toFixed(0)} ns)`);
}
