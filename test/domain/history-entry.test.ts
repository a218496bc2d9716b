import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildHistoryEntry, telemetryList } from '../../src/domain/history-entry.ts';

const origin = {
  turnId: 'turn-1',
  at: '2026-01-01T00:00:00.000Z',
  userText: 'fix the bug',
  usage: { inputTokens: 12, outputTokens: 4, cachedTokens: 2, cacheCreationTokens: 1, reasoningTokens: 3, webSearchRequests: null },
};
const answer = { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'done' }] };
const retriedAway = { type: 'message', role: 'assistant', status: 'incomplete', content: [{ type: 'output_text', text: 'half an ans' }] };

describe('history entry builder', () => {
  it('keeps an answer for the model and shows retried-away text only for display', () => {
    const entry = buildHistoryEntry(origin, {
      kind: 'answered', effect: 'append', assistantText: 'done', responseId: 'resp_1', items: [answer], discardedText: ['half an ans'], providerTelemetry: [{ provider_turns: 1 }],
    });
    assert.deepEqual(entry, {
      turnId: 'turn-1', at: origin.at, userText: 'fix the bug', assistantText: 'done', error: null, responseId: 'resp_1', effect: 'append',
      items: [answer], displayItems: [answer, retriedAway], usage: { input: 12, output: 4, cached: 2 }, providerTelemetry: [{ provider_turns: 1 }],
    });
  });

  it('never lets a failed turn\'s partial output reach the model, but counts what it spent', () => {
    const partial = { type: 'function_call', call_id: 'c1', name: 'shell', arguments: '{}' };
    const entry = buildHistoryEntry(origin, { kind: 'failed', error: 'provider_error: overloaded', partialItems: [partial], discardedText: ['half an ans'] });
    assert.deepEqual(entry.items, []);
    assert.equal(entry.effect, 'append');
    assert.deepEqual(entry.displayItems, [partial, retriedAway]);
    assert.equal(entry.error, 'provider_error: overloaded');
    assert.equal(entry.assistantText, null);
    assert.equal(entry.responseId, null);
    assert.deepEqual(entry.providerTelemetry, [], 'no request completed: an empty array, never null');
    assert.deepEqual(entry.usage, { input: 12, output: 4, cached: 2 });
  });

  it('reads telemetry stored before it was an array as a list of entries', () => {
    assert.deepEqual(telemetryList(null), []);
    assert.deepEqual(telemetryList({ provider_turns: 2 }), [{ provider_turns: 2 }]);
    assert.deepEqual(telemetryList([{ provider_turns: 1 }, { provider_turns: 3 }]), [{ provider_turns: 1 }, { provider_turns: 3 }]);
  });

  it('makes a compaction summary a replace entry owned by no turn, with no usage when none was reported', () => {
    const summary = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'summary' }] };
    const entry = buildHistoryEntry({ turnId: null, at: origin.at, userText: '', usage: null }, {
      kind: 'answered', effect: 'replace', assistantText: null, responseId: 'resp_s', items: [summary], discardedText: [], providerTelemetry: [],
    });
    assert.equal(entry.turnId, null);
    assert.equal(entry.effect, 'replace');
    assert.deepEqual(entry.items, [summary]);
    assert.deepEqual(entry.displayItems, [summary]);
    assert.equal(entry.usage, null);
  });
});
