import { isAbortError, streamEndedEarlyError, toProviderError, type ProviderErrorContext } from './provider-error.ts';
import type { ProviderEvent } from './types.ts';

/** Reads one dialect's stream payloads into provider events. */
export interface PayloadStreamReader<Event> {
  read(event: Event): Iterable<ProviderEvent>;
  /** whether the stream's terminal event (a stop or finish reason) has arrived */
  ended(): boolean;
  /** the events that close a completed stream */
  finish(): Iterable<ProviderEvent>;
}

/**
 * The stream and abort handling the Chat and Anthropic adapters share: a cancelled step rethrows the
 * signal's reason (not a provider failure, so it is never retried), every other failure becomes a
 * ProviderError with the key scrubbed, and a stream that stops before its terminal event is a
 * retryable failure rather than a short answer.
 */
export async function* readPayloadStream<Event>(
  open: () => Promise<AsyncIterable<Event[]>>,
  reader: PayloadStreamReader<Event>,
  errorContext: ProviderErrorContext,
  signal: AbortSignal,
): AsyncGenerator<ProviderEvent> {
  try {
    for await (const batch of await open()) {
      for (const event of batch) yield* reader.read(event);
    }
  } catch (error) {
    if (signal.aborted || isAbortError(error)) throw abortError(signal, error);
    throw toProviderError(error, errorContext);
  }
  // A body that ends quietly because the request was aborted is a cancelled step, not a short one.
  if (signal.aborted) throw abortError(signal, null);
  if (!reader.ended()) throw streamEndedEarlyError(errorContext.provider);
  yield* reader.finish();
}

function abortError(signal: AbortSignal, error: unknown): unknown {
  if (signal.reason instanceof Error) return signal.reason;
  return error ?? new DOMException('The operation was aborted.', 'AbortError');
}
