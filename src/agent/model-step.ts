import { setTimeout as sleep } from 'node:timers/promises';
import { ProviderError, type CanonicalItem, type Completion, type ModelRequest, type ProviderAdapter, type ProviderEvent, type ToolKind, type Usage } from './providers/types.ts';

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
  /** an attempt whose stream yields nothing for this long is aborted as `stalled` and retried */
  stallTimeoutMs?: number;
  /** characters of text, reasoning and tool arguments one attempt may stream before it is refused */
  maxOutputChars?: number;
}

/** `--model-stall-timeout` default: 120 s. */
export const DEFAULT_STALL_TIMEOUT_MS = 120_000;
/**
 * About four times the largest output window of current models (128k tokens ≈ 512k characters):
 * a step past it is a runaway stream, not an answer.
 */
export const MAX_STEP_OUTPUT_CHARS = 2_000_000;

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 4, baseDelayMs: 500, maxDelayMs: 60_000, stallTimeoutMs: DEFAULT_STALL_TIMEOUT_MS, maxOutputChars: MAX_STEP_OUTPUT_CHARS };

/** The typed reasons this module gives a failed attempt (ProviderError.code). */
export const STALLED = 'stalled';
export const OUTPUT_LIMIT = 'output_limit';

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
  const stallTimeoutMs = retry.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
  const maxOutputChars = retry.maxOutputChars ?? MAX_STEP_OUTPUT_CHARS;
  let apiDurationMs = 0;
  for (let attempt = 1; ; attempt++) {
    const started = performance.now();
    const items: CanonicalItem[] = [];
    const argumentsByCall = new Map<string, { name: string; kind: ToolKind; text: string }>();
    let text = '';
    let outputChars = 0;
    const countOutput = (delta: string) => {
      outputChars += delta.length;
      if (outputChars > maxOutputChars) {
        throw new ProviderError(adapter.dialect, null, OUTPUT_LIMIT, `${OUTPUT_LIMIT}: the model streamed more than ${maxOutputChars} characters in one step`, false, null);
      }
    };
    try {
      for await (const event of watched(adapter, request, signal, stallTimeoutMs)) {
        switch (event.type) {
          case 'text.delta':
            countOutput(event.text);
            text += event.text;
            listener.textDelta(event.text);
            break;
          case 'reasoning.delta':
            countOutput(event.text);
            listener.reasoningDelta(event.text);
            break;
          case 'tool.started':
            argumentsByCall.set(event.callId, { name: event.name, kind: event.kind, text: '' });
            listener.toolStarted(event.callId, event.name, event.kind);
            break;
          case 'tool.arguments.delta': {
            countOutput(event.delta);
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
 * One attempt's stream under the stall watchdog: when the adapter yields nothing for
 * `stallTimeoutMs` (slow first byte included), the attempt's own request is aborted and the
 * attempt fails as `stalled`, retryable. The race does not trust the adapter to notice the abort.
 */
async function* watched(adapter: ProviderAdapter, request: ModelRequest, turnSignal: AbortSignal, stallTimeoutMs: number): AsyncGenerator<ProviderEvent> {
  const attempt = new AbortController();
  const stopAttempt = () => attempt.abort(turnSignal.reason);
  // A signal aborted before this point never fires 'abort' again.
  if (turnSignal.aborted) stopAttempt();
  else turnSignal.addEventListener('abort', stopAttempt, { once: true });
  const iterator = adapter.stream(request, attempt.signal)[Symbol.asyncIterator]();
  let finished = false;
  let completed = false;
  try {
    for (;;) {
      const next = await nextWithin(iterator, stallTimeoutMs, attempt.signal);
      if (next === STALL) {
        const seconds = Math.round(stallTimeoutMs / 100) / 10;
        const stalled = new ProviderError(adapter.dialect, null, STALLED, `${STALLED}: the model stream sent nothing for ${seconds} s`, true, null);
        attempt.abort(stalled);
        throw stalled;
      }
      if (next.done) {
        finished = true;
        return;
      }
      if (next.value.type === 'response.done') completed = true;
      yield next.value;
    }
  } finally {
    turnSignal.removeEventListener('abort', stopAttempt);
    if (!finished && completed && !turnSignal.aborted) {
      void readToEnd(iterator, attempt, stallTimeoutMs);
    } else if (!finished) {
      attempt.abort(turnSignal.reason ?? new Error('the attempt was abandoned'));
      // A hung adapter may never settle its return(); it is not awaited.
      void iterator.return?.().catch(() => {});
    }
  }
}

/**
 * The step returns at the response's final event, a moment before the provider's stream ends.
 * Reading the little that is left, rather than aborting, keeps the connection to the provider for
 * the next request and spares the abort's work (an abort reason, the SDK's own abort, a torn-down
 * socket) on every step; a stream that does not end within the stall timeout is aborted after all.
 */
async function readToEnd(iterator: AsyncIterator<ProviderEvent>, attempt: AbortController, timeoutMs: number): Promise<void> {
  const timer = setTimeout(() => attempt.abort(new Error('the completed stream did not end')), timeoutMs).unref();
  try {
    while (!(await iterator.next()).done);
  } catch {
    // the response is already complete; a failure after it changes nothing
  } finally {
    clearTimeout(timer);
  }
}

const STALL = Symbol('stall');

function nextWithin<T>(iterator: AsyncIterator<T>, timeoutMs: number, signal: AbortSignal): Promise<IteratorResult<T> | typeof STALL> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => settle(() => resolve(STALL)), timeoutMs);
    const onAbort = () => settle(() => reject(signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });
    let settled = false;
    function settle(action: () => void) {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      action();
    }
    iterator.next().then((result) => settle(() => resolve(result)), (error: unknown) => settle(() => reject(error)));
  });
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
