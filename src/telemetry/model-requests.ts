/**
 * Model requests as the operator sees them: every attempt the agent makes against a provider (one
 * `adapter.stream` call) is a `chat {model}` client span with the GenAI attributes, and counts in
 * agentd_model_requests_total and the duration histogram (to the first event and to the end).
 * Wrapping the adapter keeps the agent loop and its retries unaware of telemetry.
 */
import { ProviderError, type ProviderAdapter, type ProviderEvent } from '../agent/providers/types.ts';
import type { CatalogModel } from '../config/models-file.ts';
import type { ModelRequestStatus } from './recorder.ts';
import type { RuntimeTelemetry } from './runtime-telemetry.ts';
import { modelRequestAttributes, modelResponseAttributes, spanNames } from './tracing.ts';

/** The adapter itself when neither metrics nor tracing is on. */
export function instrumentedAdapter(adapter: ProviderAdapter, model: CatalogModel, telemetry: RuntimeTelemetry): ProviderAdapter {
  if (!telemetry.metrics.enabled && !telemetry.tracing.enabled) return adapter;
  return {
    dialect: adapter.dialect,
    stream: (request, signal) => measuredStream(adapter.stream(request, signal), signal, model, telemetry),
  };
}

async function* measuredStream(events: AsyncIterable<ProviderEvent>, signal: AbortSignal, model: CatalogModel, telemetry: RuntimeTelemetry): AsyncGenerator<ProviderEvent> {
  const { metrics, tracing } = telemetry;
  const startedMs = performance.now();
  const span = tracing.startSpan(spanNames.modelRequest(model.transportModel), modelRequestAttributes(model.provider, model.transportModel), { kind: 'client' });
  let firstEventMs: number | null = null;
  let status: ModelRequestStatus = 'error';
  let failure: unknown = undefined;
  try {
    for await (const event of events) {
      firstEventMs ??= performance.now() - startedMs;
      if (event.type === 'response.done') {
        status = 'ok';
        const finishReason = event.stopReason ?? event.completion.reason ?? event.completion.status;
        span.setAttributes({ ...modelResponseAttributes(event.usage, [finishReason]), ...(event.model ? { 'gen_ai.response.model': event.model } : {}) });
      }
      yield event;
    }
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    // a turn's cancel aborts the attempt with its own reason; a stall aborts it with a ProviderError
    if (status !== 'ok' && signal.aborted && !(signal.reason instanceof ProviderError)) status = 'cancelled';
    const endedMs = performance.now() - startedMs;
    metrics.modelRequestFinished(model.provider, status, firstEventMs === null ? null : firstEventMs / 1000, endedMs / 1000);
    span.end(status === 'error' ? (failure ?? signal.reason ?? new Error('abandoned')) : undefined);
  }
}
