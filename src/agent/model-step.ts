import { setTimeout as sleep } from 'node:timers/promises';
import { ProviderError, type CanonicalItem, type Completion, type ModelRequest, type ProviderAdapter, type ProviderEvent, type ToolKind, type Usage } from './providers/types.ts';

/** What the agent loop is told while a step streams; the runtime turns these into SSE events. */
export interface StepListener {
  /** `itemId`: the provider's id of the output item, when it gives one (CONTRACT.md §19) */
  textDelta(text: string, itemId?: string): void;
  reasoningDelta(text: string, itemId?: string): void;
  toolStarted(callId: string, name: string, kind: ToolKind, itemId?: string): void;
  toolArguments(callId: string, name: string, kind: ToolKind, argumentsSoFar: string, itemId?: string): void;
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
const DEFAULT_STALL_TIMEOUT_MS = 120_000;
/**
 * About four times the largest output window of current models (128k tokens ≈ 512k characters):
 * a step past it is a runaway stream, not an answer.
 */
const MAX_STEP_OUTPUT_CHARS = 2_000_000;

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 4, baseDelayMs: 500, maxDelayMs: 60_000, stallTimeoutMs: DEFAULT_STALL_TIMEOUT_MS, maxOutputChars: MAX_STEP_OUTPUT_CHARS };

/** The typed reasons this module gives a failed attempt (ProviderError.code). */
const STALLED = 'stalled';
const OUTPUT_LIMIT = 'output_limit';

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
    const argumentsByCall = new Map<string, { name: string; kind: ToolKind; text: string; itemId: string | undefined }>();
    let text = '';
    let outputChars = 0;
    const countOutput = (delta: string) => {
      outputChars += delta.length;
      if (outputChars > maxOutputChars) {
        throw new ProviderError(adapter.dialect, null, OUTPUT_LIMIT, `${OUTPUT_LIMIT}: the model streamed more than ${maxOutputChars} characters in one step`, false, null);
      }
    };
    try {
      const stream = new WatchedAttempt(adapter, request, signal, stallTimeoutMs);
      try {
        for (let next = await stream.next(); !next.done; next = await stream.next()) {
          const event = next.value;
          switch (event.type) {
            case 'text.delta':
              countOutput(event.text);
              text += event.text;
              listener.textDelta(event.text, event.itemId);
              break;
            case 'reasoning.delta':
              countOutput(event.text);
              listener.reasoningDelta(event.text, event.itemId);
              break;
            case 'tool.started':
              argumentsByCall.set(event.callId, { name: event.name, kind: event.kind, text: '', itemId: event.itemId });
              listener.toolStarted(event.callId, event.name, event.kind, event.itemId);
              break;
            case 'tool.arguments.delta': {
              countOutput(event.delta);
              const call = argumentsByCall.get(event.callId);
              if (!call) break;
              call.text += event.delta;
              listener.toolArguments(event.callId, call.name, call.kind, call.text, call.itemId);
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
      } finally {
        // before a retry waits, so an abandoned attempt is aborted at once
        stream.close();
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
 *
 * One timer and one abort listener serve the whole attempt (not one of each per event): the timer
 * looks at how long the current wait has lasted and sleeps again for the rest, and an abort
 * rejects the wait in progress.
 */
class WatchedAttempt {
  private readonly attempt = new AbortController();
  private readonly iterator: AsyncIterator<ProviderEvent>;
  private timer: NodeJS.Timeout;
  /** the wait in progress, failed by a stall or an abort */
  private waiting: { reject(reason: unknown): void } | null = null;
  private waitingSinceMs = 0;
  private finished = false;
  private completed = false;

  constructor(
    private readonly adapter: ProviderAdapter,
    request: ModelRequest,
    private readonly turnSignal: AbortSignal,
    private readonly timeoutMs: number,
  ) {
    // A signal aborted before this point never fires 'abort' again.
    if (turnSignal.aborted) this.stopAttempt();
    else turnSignal.addEventListener('abort', this.stopAttempt, { once: true });
    this.attempt.signal.addEventListener('abort', this.failWaiting, { once: true });
    this.iterator = adapter.stream(request, this.attempt.signal)[Symbol.asyncIterator]();
    this.timer = setTimeout(this.checkStall, timeoutMs);
  }

  next(): Promise<IteratorResult<ProviderEvent>> {
    const { signal } = this.attempt;
    if (signal.aborted) return Promise.reject(signal.reason);
    this.waitingSinceMs = performance.now();
    return new Promise((resolve, reject) => {
      const waiting = { reject };
      this.waiting = waiting;
      this.iterator.next().then(
        (result) => {
          if (this.waiting !== waiting) return;
          this.waiting = null;
          if (result.done) this.finished = true;
          else if (result.value.type === 'response.done') this.completed = true;
          resolve(result);
        },
        (error: unknown) => {
          if (this.waiting !== waiting) return;
          this.waiting = null;
          reject(error);
        },
      );
    });
  }

  /** The attempt is over: a completed stream is read to its end, anything else is abandoned. */
  close(): void {
    clearTimeout(this.timer);
    this.turnSignal.removeEventListener('abort', this.stopAttempt);
    this.attempt.signal.removeEventListener('abort', this.failWaiting);
    if (this.finished) return;
    if (this.completed && !this.turnSignal.aborted) {
      void readToEnd(this.iterator, this.attempt, this.timeoutMs);
      return;
    }
    this.attempt.abort(this.turnSignal.reason ?? new Error('the attempt was abandoned'));
    // A hung adapter may never settle its return(); it is not awaited.
    void this.iterator.return?.().catch(() => {});
  }

  private readonly stopAttempt = () => this.attempt.abort(this.turnSignal.reason);

  private readonly failWaiting = () => {
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.reject(this.attempt.signal.reason);
  };

  private readonly checkStall = () => {
    const remainingMs = this.waiting === null ? this.timeoutMs : this.timeoutMs - (performance.now() - this.waitingSinceMs);
    if (remainingMs >= 1) {
      this.timer = setTimeout(this.checkStall, remainingMs);
      return;
    }
    const seconds = Math.round(this.timeoutMs / 100) / 10;
    this.attempt.abort(new ProviderError(this.adapter.dialect, null, STALLED, `${STALLED}: the model stream sent nothing for ${seconds} s`, true, null));
  };
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

/**
 * One name per completion reason across dialects: an output-limit stop is `max_tokens` everywhere
 * (Anthropic's stop_reason and the Chat adapter already say so; Responses says
 * `max_output_tokens`). The provider's own word stays in the telemetry's stop_reason.
 */
function normalizedCompletion(completion: Completion): Completion {
  if (completion.status === 'incomplete' && completion.reason === 'max_output_tokens') return { ...completion, reason: 'max_tokens' };
  return completion;
}
