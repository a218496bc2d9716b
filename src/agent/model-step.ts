import { setTimeout as sleep } from 'node:timers/promises';
import { ProviderError, type CanonicalItem, type Completion, type ModelRequest, type ProviderAdapter, type ToolKind, type Usage } from './providers/types.ts';

/** What the agent loop is told while a step streams; the runtime turns these into SSE events. */
export interface StepListener {
  textDelta(text: string): void;
  reasoningDelta(text: string): void;
  toolStarted(callId: string, name: string, kind: ToolKind): void;
  toolArguments(callId: string, name: string, kind: ToolKind, argumentsSoFar: string): void;
  /** an attempt failed and will be retried after `delayMs` (display-only events) */
  attemptFailed(error: ProviderError, attempt: number, delayMs: number, startedCallIds: string[]): void;
}

export interface StepResult {
  items: CanonicalItem[];
  responseId: string;
  model: string | null;
  usage: Usage | null;
  completion: Completion;
  stopReason: string | null;
  apiDurationMs: number;
  /** partial text of attempts that were discarded, for displayItems */
  discardedText: string[];
}

export interface RetryPolicy {
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 4, baseDelayMs: 500, maxDelayMs: 60_000 };

/** The partial text of a step that failed for good, so the turn can show it in displayItems. */
export class StepFailure extends Error {
  constructor(
    override readonly cause: unknown,
    readonly partialText: string[],
  ) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}

/**
 * Streams one model step, retrying retryable provider failures with bounded backoff that honours
 * the provider's retry-after. Nothing from a failed attempt reaches the returned items.
 */
export async function runModelStep(
  adapter: ProviderAdapter,
  request: ModelRequest,
  listener: StepListener,
  signal: AbortSignal,
  retry: RetryPolicy = DEFAULT_RETRY,
): Promise<StepResult> {
  const discardedText: string[] = [];
  let apiDurationMs = 0;
  for (let attempt = 1; ; attempt++) {
    const started = performance.now();
    const items: CanonicalItem[] = [];
    const argumentsByCall = new Map<string, { name: string; kind: ToolKind; text: string }>();
    let text = '';
    try {
      for await (const event of adapter.stream(request, signal)) {
        switch (event.type) {
          case 'text.delta':
            text += event.text;
            listener.textDelta(event.text);
            break;
          case 'reasoning.delta':
            listener.reasoningDelta(event.text);
            break;
          case 'tool.started':
            argumentsByCall.set(event.callId, { name: event.name, kind: event.kind, text: '' });
            listener.toolStarted(event.callId, event.name, event.kind);
            break;
          case 'tool.arguments.delta': {
            const call = argumentsByCall.get(event.callId);
            if (!call) break;
            call.text += event.delta;
            listener.toolArguments(event.callId, call.name, call.kind, call.text);
            break;
          }
          case 'item.done':
            items.push(event.item);
            break;
          case 'response.done':
            apiDurationMs += performance.now() - started;
            return { items, responseId: event.responseId, model: event.model, usage: event.usage, completion: normalizedCompletion(event.completion), stopReason: event.stopReason, apiDurationMs, discardedText };
        }
      }
      throw new ProviderError('provider', null, null, 'the model stream ended without a final event', true, null);
    } catch (error) {
      apiDurationMs += performance.now() - started;
      if (text) discardedText.push(text);
      if (signal.aborted) throw error;
      const retryable = error instanceof ProviderError && error.retryable && attempt < retry.maxAttempts;
      if (!retryable) throw new StepFailure(error, discardedText);
      const delayMs = Math.min(retry.maxDelayMs, error.retryAfterMs ?? retry.baseDelayMs * 2 ** (attempt - 1));
      listener.attemptFailed(error, attempt, delayMs, [...argumentsByCall.keys()]);
      await sleep(delayMs, undefined, { signal });
    }
  }
}

/**
 * One name per completion reason across dialects: an output-limit stop is `max_tokens` everywhere
 * (Anthropic's stop_reason and the Chat adapter already say so; Responses says
 * `max_output_tokens`). The provider's own word stays in the telemetry's stop_reason.
 */
export function normalizedCompletion(completion: Completion): Completion {
  if (completion.status === 'incomplete' && completion.reason === 'max_output_tokens') return { ...completion, reason: 'max_tokens' };
  return completion;
}
