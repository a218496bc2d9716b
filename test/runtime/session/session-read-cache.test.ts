import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SessionReadCache } from '../../../src/runtime/session/session-read-cache.ts';
import { SessionRowCache } from '../../../src/store/session-row-cache.ts';

describe('session read cache', () => {
  it('serves a read again until a session row is written, then reads anew', async () => {
    const rows = new SessionRowCache();
    const cache = new SessionReadCache(rows);
    let reads = 0;
    const produce = async () => `body ${++reads}`;
    assert.equal(await cache.read('key', produce), 'body 1');
    assert.equal(await cache.read('key', produce), 'body 1');
    rows.noteWritten();
    assert.equal(await cache.read('key', produce), 'body 2');
    assert.equal(await cache.read('key', produce), 'body 2');
  });

  it('does not keep a read that a write overlapped: it may hold the row from before the commit', async () => {
    const rows = new SessionRowCache();
    const cache = new SessionReadCache(rows);
    let reads = 0;
    const racedByAWrite = async () => {
      reads += 1;
      rows.noteWritten(); // another connection's transaction commits while this read runs
      return 'old row';
    };
    assert.equal(await cache.read('key', racedByAWrite), 'old row');
    assert.equal(await cache.read('key', async () => 'new row'), 'new row');
    assert.equal(reads, 1);
  });

  it('answers a current entry at once, without a promise; a miss with one', async () => {
    const rows = new SessionRowCache();
    const cache = new SessionReadCache(rows);
    const miss = cache.read('key', async () => 'body');
    assert.ok(miss instanceof Promise);
    assert.equal(await miss, 'body');
    assert.equal(cache.read('key', async () => 'not read'), 'body');
  });

  it('keeps nothing of a read that failed', async () => {
    const rows = new SessionRowCache();
    const cache = new SessionReadCache(rows);
    await assert.rejects(async () => cache.read('key', async () => { throw new Error('no such session'); }));
    assert.equal(await cache.read('key', async () => 'found'), 'found');
  });
});

describe('session read cache bounds', () => {
  it('holds at most about 4 MB of bodies: a client walking many large pages does not grow it without end', async () => {
    const rows = new SessionRowCache();
    const cache = new SessionReadCache(rows);
    const page = 'x'.repeat(100_000);
    for (let index = 0; index < 100; index++) await cache.read(`page ${index}`, async () => page);
    const held = (cache as unknown as { entries: Map<string, { body: string }> }).entries;
    const characters = [...held.values()].reduce((sum, entry) => sum + entry.body.length, 0);
    assert.ok(characters <= 4_000_000, `${characters} characters held`);
    assert.ok(held.size > 0, 'the newest pages are still held');
  });
});
