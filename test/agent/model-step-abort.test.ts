import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runModelStep, StepFailure } from '../../src/agent/model-step.ts';
import { ProviderError, type ModelRequest, type ProviderAdapter, type ProviderEvent } from '../../src/agent/providers/types.ts';

/** An adapter whose stream never yields and ends only when its own signal aborts. */
const hangingAdapter: ProviderAdapter = {
  dialect: 'openai-chat',
  async *stream(_request: ModelRequest, signal: AbortSignal): AsyncIterable<ProviderEvent> {
    await new Promise((_resolve, reject) => {
      if (signal.aborted) reject(signal.reason);
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  },
};

const quietListener = { textDelta() {}, reasoningDelta() {}, toolStarted() {}, toolArguments() {}, attemptFailed() {} };

test('a step whose turn was cancelled before it began ends at once instead of waiting for the stall watchdog', async () => {
  const cancelled = new AbortController();
  cancelled.abort(new Error('cancelled'));
  const retry = { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1, stallTimeoutMs: 60_000 };
  const outcome = await Promise.race([
    runModelStep(hangingAdapter, {} as ModelRequest, quietListener, cancelled.signal, retry).then(
      () => 'resolved',
      () => 'rejected',
    ),
    new Promise((resolve) => setTimeout(() => resolve('still waiting'), 2_000).unref()),
  ]);
  assert.equal(outcome, 'rejected');
});

/** An adapter that answers, then either ends its stream or keeps it open until aborted; it reports what happened after the answer. */
function answeringAdapter(afterAnswer: 'end' | 'hang') {
  const seen = { signal: null as AbortSignal | null, readToEnd: false, abortedAfterAnswer: false };
  const adapter: ProviderAdapter = {
    dialect: 'openai-responses',
    async *stream(_request: ModelRequest, signal: AbortSignal): AsyncIterable<ProviderEvent> {
      seen.signal = signal;
      yield { type: 'text.delta', text: 'hi' } as ProviderEvent;
      yield { type: 'response.done', responseId: 'resp_1', model: 'm', usage: null, completion: { status: 'completed' }, stopReason: 'stop' } as unknown as ProviderEvent;
      if (afterAnswer === 'hang') {
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        seen.abortedAfterAnswer = true;
        return;
      }
      seen.readToEnd = true;
    },
  };
  return { adapter, seen };
}

test('a completed step reads its stream to the end instead of aborting the request', async () => {
  const { adapter, seen } = answeringAdapter('end');
  const result = await runModelStep(adapter, {} as ModelRequest, quietListener, new AbortController().signal);
  assert.equal(result.responseId, 'resp_1');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(seen.readToEnd, true, 'the stream was read past its final event');
  assert.equal(seen.signal?.aborted, false, 'the finished request was not aborted');
});

test('a completed step whose stream never ends is aborted after the stall timeout', async () => {
  const { adapter, seen } = answeringAdapter('hang');
  const retry = { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1, stallTimeoutMs: 50 };
  const result = await runModelStep(adapter, {} as ModelRequest, quietListener, new AbortController().signal, retry);
  assert.equal(result.responseId, 'resp_1');
  assert.equal(seen.signal?.aborted, false, 'not aborted the moment the answer came');
  await new Promise((resolve) => setTimeout(resolve, 150));
  assert.equal(seen.signal?.aborted, true);
  assert.equal(seen.abortedAfterAnswer, true);
});

/** An adapter that streams `deltas` text deltas `gapMs` apart, then either answers or goes quiet until aborted. */
function pacedAdapter(deltas: number, gapMs: number, then: 'answer' | 'go quiet') {
  const seen = { lastDeltaAtMs: 0, abortReason: null as unknown };
  const adapter: ProviderAdapter = {
    dialect: 'openai-responses',
    async *stream(_request: ModelRequest, signal: AbortSignal): AsyncIterable<ProviderEvent> {
      for (let index = 0; index < deltas; index++) {
        await new Promise((resolve) => setTimeout(resolve, gapMs));
        seen.lastDeltaAtMs = performance.now();
        yield { type: 'text.delta', text: `w${index} ` } as ProviderEvent;
      }
      if (then === 'go quiet') {
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        seen.abortReason = signal.reason;
        return;
      }
      yield { type: 'response.done', responseId: 'resp_paced', model: 'm', usage: null, completion: { status: 'completed' }, stopReason: 'stop' } as unknown as ProviderEvent;
    },
  };
  return { adapter, seen };
}

test('a stream whose events keep coming inside the stall timeout never stalls, however long it runs in all', async () => {
  const { adapter } = pacedAdapter(8, 40, 'answer');
  const retry = { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1, stallTimeoutMs: 100 };
  const startedMs = performance.now();
  const result = await runModelStep(adapter, {} as ModelRequest, quietListener, new AbortController().signal, retry);
  assert.equal(result.responseId, 'resp_paced');
  assert.ok(performance.now() - startedMs >= 300, 'the stream ran for three stall timeouts in all');
});

test('a stream that goes quiet mid-way is aborted as stalled once the timeout has passed since its last event', async () => {
  const { adapter, seen } = pacedAdapter(3, 30, 'go quiet');
  const retry = { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1, stallTimeoutMs: 120 };
  const failure = await runModelStep(adapter, {} as ModelRequest, quietListener, new AbortController().signal, retry).then(
    () => assert.fail('the step should have failed'),
    (error: unknown) => error,
  );
  const quietForMs = performance.now() - seen.lastDeltaAtMs;
  assert.ok(failure instanceof StepFailure);
  assert.ok(failure.cause instanceof ProviderError);
  assert.equal(failure.cause.code, 'stalled');
  assert.equal(seen.abortReason, failure.cause, "the attempt's own request was aborted with the stall");
  assert.ok(quietForMs >= 118, `not before the timeout (quiet for ${quietForMs.toFixed(0)} ms)`);
  // about time: the stall timeout is 120 ms (2 ms early allowed for timer rounding); 1 s is eight timeouts, room for a loaded machine while still failing a watchdog that waits for something else
  assert.ok(quietForMs < 1_000, `soon after it (quiet for ${quietForMs.toFixed(0)} ms)`);
  assert.deepEqual(failure.partialText, ['w0 w1 w2 ']);
});
