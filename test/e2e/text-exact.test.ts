import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BACKENDS } from '../support/backends.ts';
import { waitForTurn } from '../support/server.ts';
import { useFakeServer } from '../support/harness.ts';
import { STORED_TEXT_MARKER } from '../../src/store/text-codec.ts';

// What PostgreSQL cannot hold (U+0000), what UTF-8 drivers turn into U+FFFD (lone surrogates),
// and the codec's own marker, each beside ordinary text.
const AWKWARD = `nul \0 here, lone high \ud800 and low \udc00, a pair 😀, the marker ${STORED_TEXT_MARKER}0000`;

for (const backend of BACKENDS) {
  describe(`text is stored exactly on ${backend}`, () => {
    const harness = useFakeServer({ backend });
    const request = (method: string, path: string, body?: unknown) => harness.server.request(method, path, body === undefined ? {} : { body });

    it('keeps NUL and lone surrogates in a title, through create, patch and reads', async () => {
      const created = await request('POST', '/v1/sessions', { title: `created ${AWKWARD}` });
      assert.equal(created.status, 201);
      assert.equal(created.json.title, `created ${AWKWARD}`);
      assert.equal((await request('GET', `/v1/sessions/${created.json.id}`)).json.title, `created ${AWKWARD}`);
      const patched = await request('PATCH', `/v1/sessions/${created.json.id}`, { title: `patched ${AWKWARD}` });
      assert.equal(patched.status, 200);
      assert.equal((await request('GET', `/v1/sessions/${created.json.id}`)).json.title, `patched ${AWKWARD}`);
      const listed = (await request('GET', '/v1/sessions?limit=100')).json.data.find((session: any) => session.id === created.json.id);
      assert.equal(listed.title, `patched ${AWKWARD}`);
    });

    it('keeps them in an input, a model answer, tool arguments and tool output, everywhere they are read', async () => {
      const session = await harness.newSession();
      writeFileSync(join(harness.server.workspace, 'nul.txt'), Buffer.from('before\0after\n'));
      const brokenArguments = `{"command": "cat nul.txt"}\0${AWKWARD}`;
      harness.fake.enqueue(
        { kind: 'reply', toolCalls: [
          { name: 'shell', arguments: JSON.stringify({ command: 'cat nul.txt' }), callId: 'call_cat' },
          { name: 'shell', arguments: brokenArguments, callId: 'call_broken' },
        ] },
        { kind: 'reply', text: `answer ${AWKWARD}` },
      );
      const submitted = await request('POST', `/v1/sessions/${session.id}/turns`, { input: `input ${AWKWARD}` });
      assert.equal(submitted.status, 202);
      assert.equal(submitted.json.input, `input ${AWKWARD}`);
      const turn = await waitForTurn(harness.server, submitted.json.id);
      assert.equal(turn.status, 'completed', turn.error);
      assert.equal(turn.input, `input ${AWKWARD}`);
      assert.equal(turn.userText, `input ${AWKWARD}`);
      assert.equal(turn.inputTruncated, false);

      // the model received the exact input and the exact tool output
      const sent = harness.fake.requests.find((entry) => JSON.stringify(entry.body ?? '').includes('input nul'));
      assert.ok(JSON.stringify(sent!.body).includes(JSON.stringify(`input ${AWKWARD}`).slice(1, -1)));
      assert.equal(harness.toolOutputSent('call_cat')?.includes('before\0after'), true);

      const result = await request('GET', `/v1/turns/${turn.id}/result`);
      assert.equal(result.status, 200);
      assert.equal(result.json.output.assistantText, `answer ${AWKWARD}`);
      assert.equal(result.json.turn.input, `input ${AWKWARD}`);
      const listed = (await request('GET', `/v1/turns?sessionId=${session.id}`)).json.data[0];
      assert.equal(listed.input, `input ${AWKWARD}`);
      // the derived title is the first line of the input, exactly
      assert.equal((await request('GET', `/v1/sessions/${session.id}`)).json.title, `input ${AWKWARD}`);

      const history = await request('GET', `/v1/sessions/${session.id}/history`);
      assert.equal(history.status, 200);
      const stored = history.json.data[0].turn;
      assert.equal(stored.userText, `input ${AWKWARD}`);
      assert.equal(stored.assistantText, `answer ${AWKWARD}`);
      const item = (type: string, callId: string) => stored.items.find((entry: any) => entry.type === type && entry.call_id === callId);
      assert.equal(item('function_call', 'call_broken').arguments, brokenArguments);
      assert.ok(item('function_call_output', 'call_cat').output.includes('before\0after'));

      const events = harness.events.ofTurn(turn.id);
      const finished = events.find((event) => event.type === 'agent.turn.finished')!.data.data;
      assert.equal(finished.assistantText, `answer ${AWKWARD}`);
      const catFinished = events.find((event) => event.type === 'tool.finished' && event.data.data.callId === 'call_cat')!.data.data;
      assert.ok(catFinished.output.includes('before\0after'));
      const deltas = events.filter((event) => event.type === 'response.text.delta').map((event) => event.data.data.text ?? event.data.data.delta).join('');
      assert.ok(deltas.includes(AWKWARD), 'the streamed text carries the answer exactly');

      // and the next turn replays the stored context exactly to the model
      harness.fake.enqueue({ kind: 'reply', text: 'ok' });
      const next = await request('POST', `/v1/sessions/${session.id}/turns`, { input: 'again' });
      assert.equal((await waitForTurn(harness.server, next.json.id)).status, 'completed');
      const replayed = harness.fake.requests[harness.fake.requests.length - 1].body.input;
      assert.equal(replayed[0].content[0].text, `input ${AWKWARD}`);
      assert.equal(replayed.find((entry: any) => entry.call_id === 'call_broken' && entry.type === 'function_call').arguments, brokenArguments);
    });
  });
}
