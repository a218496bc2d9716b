import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS } from '../support/backends.ts';
import { waitForTurn } from '../support/server.ts';
import { useFakeServer } from '../support/harness.ts';
import { EVENT_TEXT_LIMIT } from '../../src/domain/event-text.ts';
import { readHistoryRange } from '../../src/store/history.ts';
import { readTurnText } from '../../src/store/turns.ts';

const bounded = (text: string) => `${text.slice(0, EVENT_TEXT_LIMIT)}…`;
/** strict equality without printing megabytes when it fails */
const same = (actual: string, expected: string, what: string) =>
  assert.ok(actual === expected, `${what}: ${actual?.length} characters starting ${JSON.stringify(actual?.slice(0, 20))}, expected ${expected.length} starting ${JSON.stringify(expected.slice(0, 20))}`);

for (const backend of BACKENDS) {
  describe(`turn text is bounded in Turn bodies on ${backend}`, () => {
    const harness = useFakeServer({ backend });
    const request = (method: string, path: string, body?: unknown) => harness.server.request(method, path, body === undefined ? {} : { body });
    const db = () => harness.server.server.store.db;

    /** Runs a turn and returns its Turn as POST, GET, the result and the list answer it. */
    async function echoesOf(input: string) {
      const session = await harness.newSession();
      const submitted = await request('POST', `/v1/sessions/${session.id}/turns`, { input });
      assert.equal(submitted.status, 202);
      await waitForTurn(harness.server, submitted.json.id);
      const fetched = await request('GET', `/v1/turns/${submitted.json.id}`);
      const result = await request('GET', `/v1/turns/${submitted.json.id}/result`);
      const listed = await request('GET', `/v1/turns?sessionId=${session.id}`);
      return { session, id: submitted.json.id as string, turns: [submitted.json, fetched.json, result.json.turn, listed.json.data[0]], sizes: [submitted, fetched, result, listed].map((response) => response.text.length) };
    }

    it('keeps 16,383 characters whole and cuts 16,384 to the bound with an ellipsis', async () => {
      const atBound = 'a'.repeat(EVENT_TEXT_LIMIT - 1) + 'Z';
      for (const turn of (await echoesOf(atBound)).turns) {
        same(turn.input, atBound, "turn.input");
        same(turn.userText, atBound, "turn.userText");
        assert.equal(turn.inputTruncated, false);
      }
      const overBound = `${atBound}!`;
      for (const turn of (await echoesOf(overBound)).turns) {
        same(turn.input, bounded(overBound), "turn.input");
        assert.equal(turn.input.length, EVENT_TEXT_LIMIT + 1);
        same(turn.userText, bounded(overBound), "turn.userText");
        assert.equal(turn.inputTruncated, true);
      }
    });

    it('bounds escaped text (NUL) and never splits a surrogate pair, as the stored head is read', async () => {
      for (const input of ['\0'.repeat(EVENT_TEXT_LIMIT), '\0'.repeat(EVENT_TEXT_LIMIT + 1), `\0${'x'.repeat(40_000)}`, '😀'.repeat(EVENT_TEXT_LIMIT)]) {
        const { id, turns } = await echoesOf(input);
        const expected = input.length <= EVENT_TEXT_LIMIT ? input : input.codePointAt(0)! > 0xffff ? `${input.slice(0, EVENT_TEXT_LIMIT - 1)}…` : bounded(input);
        // served from memory, then from the database alone, alike
        for (const turn of turns) same(turn.input, expected, "turn.input");
        same((await readTurnText(db(), id))!.input, input, 'the turn row');
        assert.equal(turns[3].inputTruncated, input.length > EVENT_TEXT_LIMIT);
      }
    });

    it('answers a multi-megabyte input with small bodies, while the model and history get all of it', async () => {
      const input = `first line\n${'0123456789'.repeat(300_000)}\nthe end`;
      const { session, id, turns, sizes } = await echoesOf(input);
      for (const size of sizes) assert.ok(size < 40_000, `a body of ${size} characters`);
      for (const turn of turns) assert.equal(turn.inputTruncated, true);
      const sent = harness.fake.requests[harness.fake.requests.length - 1].body.input;
      same(sent[sent.length - 1].content[0].text, input, 'the model input');
      const [stored] = await readHistoryRange(db(), session.id, 0, 1);
      same(stored.userText, input, 'history');
      same((await readTurnText(db(), id))!.input, input, 'the turn row');
      const history = await request('GET', `/v1/sessions/${session.id}/history`);
      same(history.json.data[0].turn.userText, input.slice(0, EVENT_TEXT_LIMIT), 'the history projection cuts it');
      assert.equal(history.json.data[0].turn.projectionTruncated, true);
      assert.equal((await request('GET', `/v1/sessions/${session.id}`)).json.title, 'first line');
    });

    it('bounds the 409 turn_not_terminal details and the cancel answer of a running turn', async () => {
      const session = await harness.newSession();
      const input = 'y'.repeat(100_000);
      harness.fake.enqueue({ kind: 'hang' });
      const sent = harness.fake.requests.length;
      const running = await request('POST', `/v1/sessions/${session.id}/turns`, { input });
      await harness.fake.waitForRequests(sent + 1);
      same(harness.fake.requests[sent].body.input.at(-1).content[0].text, input, 'the model got the whole input');
      const notYet = await request('GET', `/v1/turns/${running.json.id}/result`);
      assert.equal(notYet.status, 409);
      same(notYet.json.error.details.input, bounded(input), "notYet.json.error.details.input");
      assert.equal(notYet.json.error.details.inputTruncated, true);
      const cancelled = await request('POST', `/v1/turns/${running.json.id}/cancel`);
      assert.equal(cancelled.json.status, 'cancelled');
      same(cancelled.json.input, bounded(input), "cancelled.json.input");
      assert.equal(cancelled.json.inputTruncated, true);
      const [stored] = await readHistoryRange(db(), session.id, 0, 1);
      same(stored.userText, input, 'a cancelled turn keeps the whole text in history');
    });
  });
}
