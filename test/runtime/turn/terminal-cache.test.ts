import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TerminalTurnCache } from '../../../src/runtime/turn/terminal-cache.ts';
import type { TurnRecord } from '../../../src/domain/turn.ts';

const turn = (id: string): TurnRecord => ({
  id, boundaryId: 'b', sessionId: 's', clientRequestId: id, inputDigest: 'd', status: 'completed',
  createdAt: '2026-01-01T00:00:00.000Z', startedAt: null, finishedAt: null, error: null, input: 'x', userText: 'x', inputTruncated: false, output: null, attempt: 1,
});

describe('TerminalTurnCache', () => {
  it('keeps exactly the 1,000 newest terminal turns', () => {
    const cache = new TerminalTurnCache(1000);
    for (let index = 0; index < 1000; index++) cache.add(turn(`t${index}`));
    assert.equal(cache.size, 1000);
    assert.ok(cache.get('t0'), 'at the limit the oldest is still kept');
    cache.add(turn('t1000'));
    assert.equal(cache.size, 1000);
    assert.equal(cache.get('t0'), undefined, 'one past the limit evicts the oldest');
    assert.ok(cache.get('t1'));
    assert.ok(cache.get('t1000'));
  });

  it('hands out copies, so callers cannot change the cached record', () => {
    const cache = new TerminalTurnCache(2);
    cache.add(turn('a'));
    cache.get('a')!.status = 'failed';
    assert.equal(cache.get('a')!.status, 'completed');
  });
});
