/**
 * The payloads of a streamed answer (text/event-stream), read from the response body as it arrives.
 * The official SDKs still send every request and turn every refused one into their own error; only
 * the body of a streamed answer is read here, because the SDKs' readers copy the whole pending
 * buffer on every network chunk and pass each event through three async generators, which measured
 * a sixth of a turn's CPU (docs/BENCHMARKS.md, "Fifth pass"). The format itself is parsed by
 * eventsource-parser (already the client's parser); payloads come out as one batch per network chunk.
 *
 * Which messages carry a payload, and which are errors, is each dialect's PayloadRule (its folder's
 * payloads.ts), decided exactly as each SDK's own stream reader decides (openai 6.x and @anthropic-ai/sdk `Stream.fromSSEResponse`): the same payloads, and
 * the same SDK error classes for an error sent inside a 200 stream. One difference, from the
 * format's rules: a message with no `data` line is no message at all (the openai reader failed on
 * one with a JSON syntax error; no provider sends one).
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';

/** A dialect's rule: the message's payload, undefined to skip it, or a throw for an error message. */
export type PayloadRule<Payload> = (message: EventSourceMessage) => Payload | undefined;

/**
 * The body's payloads, one batch per network chunk. A message left unfinished at the end is dropped
 * (as the SDKs and browsers do). Leaving early ends the body, which closes the connection.
 */
export async function* eventStreamPayloads<Payload>(body: AsyncIterable<Uint8Array> | null, payloadOf: PayloadRule<Payload>): AsyncGenerator<Payload[]> {
  if (body === null) return;
  let batch: Payload[] = [];
  let failure: { error: unknown } | null = null;
  const parser = createParser({
    onEvent(message) {
      if (failure !== null) return;
      try {
        const payload = payloadOf(message);
        if (payload !== undefined) batch.push(payload);
      } catch (error) {
        failure = { error };
      }
    },
  });
  // What arrived before a failing message is delivered first, as the SDKs' one-by-one readers did.
  function* handOver(): Generator<Payload[]> {
    if (batch.length > 0) {
      const ready = batch;
      batch = [];
      yield ready;
    }
    if (failure !== null) throw failure.error;
  }
  const text = new TextDecoder();
  let endsInCr = false;
  const feed = (decoded: string): void => {
    if (decoded === '') return;
    parser.feed(decoded);
    endsInCr = decoded.charCodeAt(decoded.length - 1) === CR;
  };
  // Leaving the loop early (a failure, or the caller stopping) ends the body: node's response is
  // destroyed, a web stream cancelled.
  for await (const chunk of body) {
    feed(text.decode(chunk, { stream: true }));
    yield* handOver();
  }
  feed(text.decode());
  // The parser holds a final CR in case an LF follows; at the end none will, so it ends its line.
  if (endsInCr) parser.feed('\n');
  yield* handOver();
}

const CR = 13;
