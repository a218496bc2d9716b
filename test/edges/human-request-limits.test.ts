// SPEC §8 "Human request size: 64 KiB encoded JSON" and "Human request options: 100", each at the
// limit and one past, with the size counted in bytes: multi-byte prompts are where a character
// count would let a request three times too large through.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { createBackend, type TestBackend } from '../support/backends.ts';
import { openStore, type Store } from '../../src/store/database.ts';
import { EventHub } from '../../src/runtime/event-hub.ts';
import { HumanRequestRefused, MAX_REQUEST_BYTES, MAX_REQUEST_OPTIONS, RequestBroker } from '../../src/runtime/turn/requests.ts';
import type { HumanQuestion } from '../../src/domain/human-request.ts';

const TURN_ID = '00000000-0000-7000-8000-000000000001';
const SPEC_LIMIT_BYTES = 65536;

/** The published request's encoded size without its prompt: its id and createdAt have fixed lengths. */
function encodedSizeWith(prompt: string, options: string[]): number {
  const published = { id: '00000000-0000-7000-8000-000000000000', turnId: TURN_ID, sessionId: 's', kind: 'plan_question', prompt, options, createdAt: new Date(0).toISOString() };
  return Buffer.byteLength(JSON.stringify(published));
}

/** A prompt of `unit` repeated, padded with ASCII so that the published request is exactly `bytes` long. */
function promptFilling(bytes: number, unit: string, options: string[]): string {
  const overhead = encodedSizeWith('', options);
  const unitBytes = Buffer.byteLength(unit);
  const repeats = Math.floor((bytes - overhead) / unitBytes);
  const prompt = unit.repeat(repeats) + 'x'.repeat(bytes - overhead - repeats * unitBytes);
  assert.equal(encodedSizeWith(prompt, options), bytes);
  return prompt;
}

describe('human request limits at the edge', () => {
  let backend: TestBackend;
  let store: Store;
  let hub: EventHub;
  let broker: RequestBroker;
  before(async () => {
    backend = await createBackend('sqlite');
    store = await openStore({ databaseUrl: null, stateDir: backend.stateDir });
    hub = await EventHub.open(store.db, 'default', 1000, pino({ level: 'silent' }));
    broker = new RequestBroker(hub);
  });
  after(async () => {
    await store.close();
    await backend.drop();
  });

  /** Asks and reports whether the request was published (the turn waits) or refused before it. */
  async function outcomeOf(question: HumanQuestion): Promise<'published' | 'refused'> {
    let waiting = false;
    const answer = broker.ask(question, () => (waiting = true));
    if (waiting) {
      await broker.resolve((await broker.list(TURN_ID))[0].id, question.options[0], undefined);
      await answer;
      return 'published';
    }
    await assert.rejects(answer, HumanRequestRefused);
    return 'refused';
  }

  const question = (prompt: string, options = ['a', 'b']): HumanQuestion => ({ sessionId: 's', turnId: TURN_ID, agentId: null, kind: 'plan_question', prompt, options });

  it('is the SPEC figure', () => {
    assert.equal(MAX_REQUEST_BYTES, SPEC_LIMIT_BYTES);
    assert.equal(MAX_REQUEST_OPTIONS, 100);
  });

  for (const [name, unit] of [['ASCII', 'a'], ['two-byte é', 'é'], ['three-byte €', '€'], ['four-byte emoji', '🦀']] as const) {
    it(`publishes ${name} at exactly 64 KiB of encoded JSON and refuses one byte more`, async () => {
      assert.equal(await outcomeOf(question(promptFilling(SPEC_LIMIT_BYTES, unit, ['a', 'b']))), 'published');
      const before = hub.log.eventsAfter(0).length;
      assert.equal(await outcomeOf(question(promptFilling(SPEC_LIMIT_BYTES + 1, unit, ['a', 'b']))), 'refused');
      const warning = hub.log.eventsAfter(0).slice(before).find((event) => event.type === 'warning');
      assert.match(JSON.stringify(warning?.data), /65537 bytes \(limit 65536\)/);
    });
  }

  it('counts the bytes JSON escapes add (quotes, backslashes, control characters)', async () => {
    // each U+0001 is six bytes once encoded (\u0001), each quote two
    const escaped = '\u0001'.repeat(11_000) + '"'.repeat(2_000);
    assert.ok(escaped.length < SPEC_LIMIT_BYTES / 4 && encodedSizeWith(escaped, ['a']) > SPEC_LIMIT_BYTES);
    assert.equal(await outcomeOf(question(escaped, ['a'])), 'refused');
  });

  it('publishes 100 options and refuses 101', async () => {
    const options = (count: number) => Array.from({ length: count }, (_, index) => `option ${index}`);
    assert.equal(await outcomeOf(question('Pick', options(MAX_REQUEST_OPTIONS))), 'published');
    assert.equal(await outcomeOf(question('Pick', options(MAX_REQUEST_OPTIONS + 1))), 'refused');
  });
});
