import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runModelStep } from '../../src/agent/model-step.ts';
import type { ModelRequest, ProviderAdapter, ProviderEvent } from '../../src/agent/providers/types.ts';

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
