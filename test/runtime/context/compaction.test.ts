import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS } from '../../support/backends.ts';
import { EventRecorder } from '../../support/events.ts';
import { waitForTurn } from '../../support/server.ts';
import { estimateTokens, SUMMARY_INSTRUCTIONS, SUMMARY_PREFIX } from '../../../src/agent/compaction.ts';
import { toolsTokens } from '../../../src/runtime/context/compaction.ts';
import { spawnAgentSpec } from '../../../src/agent/tools/spawn-agent.ts';
import type { ToolSpec } from '../../../src/agent/providers/types.ts';
import { lastRequest, messageTexts, startHarness, type Harness } from '../session/history-support.ts';

/** The context-reset event of a turn, read back from the replay window. */
async function resetEventOf(h: Harness, turnId: string): Promise<any> {
  const events = new EventRecorder(h.server.url, { lastEventId: 0 });
  try {
    const event = await events.waitFor((candidate) => candidate.type === 'model.context.reset' && candidate.data.turnId === turnId, 5_000);
    return event.data.data;
  } finally {
    events.close();
  }
}

const noTools = (body: any) => !body.tools || body.tools.length === 0;

describe('the estimate of the tools offered', () => {
  it('is estimateTokens of the specs, each measured once', () => {
    const shell: ToolSpec = { name: 'shell', description: 'run a command', kind: 'function', parameters: { type: 'object', properties: { command: { type: 'array', items: { type: 'string' } } } } };
    for (const tools of [[], [shell], [shell, spawnAgentSpec], [spawnAgentSpec, shell, shell]]) {
      assert.equal(toolsTokens(tools), estimateTokens(tools));
      assert.equal(toolsTokens(tools), estimateTokens(tools), 'the same again from the kept measures');
    }
  });
});

for (const backend of BACKENDS) {
  describe(`compaction commands on ${backend}`, () => {
    let h: Harness;
    before(async () => {
      h = await startHarness(backend);
    });
    after(async () => h.close());

    async function sessionWithTwoTurns() {
      const session = await h.newSession();
      h.fake.enqueue({ kind: 'reply', text: 'A1' }, { kind: 'reply', text: 'A2' });
      await h.runTurn(session.id, 'Q1');
      await h.runTurn(session.id, 'Q2');
      return session;
    }

    it('/clear starts a new generation with an empty context, without asking the model', async () => {
      const session = await sessionWithTwoTurns();
      const requestsBefore = h.fake.requests.length;
      const cleared = await h.runTurn(session.id, '  /clear ');
      assert.equal(cleared.status, 'completed');
      assert.equal(h.fake.requests.length, requestsBefore);
      const reset = await resetEventOf(h, cleared.id);
      assert.deepEqual([reset.displayOnly, reset.reason], [true, 'clear']);

      const page = await h.page(session.id);
      assert.equal(page.generationStart, 2);
      const entry = page.data[2].turn;
      assert.deepEqual([entry.effect, entry.userText, entry.items, entry.assistantText], ['reset', '  /clear ', [], null]);

      h.fake.enqueue({ kind: 'reply', text: 'A3' });
      await h.runTurn(session.id, 'Q3');
      assert.deepEqual(messageTexts(lastRequest(h.fake)), ['user: Q3']);
      const after = await h.page(session.id);
      assert.deepEqual(after.data.map((item: any) => item.turn.userText), ['Q1', 'Q2', '  /clear ', 'Q3']);
      assert.equal(after.generationStart, 2);
    });

    it('/compact replaces the context by the model\'s summary; later turns send only the summary', async () => {
      const session = await sessionWithTwoTurns();
      h.fake.enqueue({ kind: 'reply', text: 'The user asked Q1 and Q2.', usage: { input: 40, output: 8, cached: 0 } });
      const compacted = await h.runTurn(session.id, '/compact');
      assert.equal(compacted.status, 'completed');

      const summaryRequest = lastRequest(h.fake);
      assert.equal(summaryRequest.instructions, SUMMARY_INSTRUCTIONS);
      assert.ok(noTools(summaryRequest));
      const asked = messageTexts(summaryRequest);
      assert.deepEqual(asked.slice(0, 4), ['user: Q1', 'assistant: A1', 'user: Q2', 'assistant: A2']);
      assert.equal(asked.length, 5);
      assert.match(asked[4], /^user: Summarise the conversation/);

      const result = (await h.server.request('GET', `/v1/turns/${compacted.id}/result`)).json;
      assert.equal(result.output.assistantText, 'The user asked Q1 and Q2.');
      const reset = await resetEventOf(h, compacted.id);
      assert.deepEqual([reset.displayOnly, reset.reason], [true, 'compact']);

      const page = await h.page(session.id);
      const entry = page.data[2].turn;
      assert.equal(entry.effect, 'replace');
      assert.deepEqual(entry.items, [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: `${SUMMARY_PREFIX}The user asked Q1 and Q2.` }] }]);
      assert.equal(page.generationStart, 0);
      assert.deepEqual((await h.server.request('GET', `/v1/sessions/${session.id}`)).json.usage.output, 8 + 2 * 5);

      h.fake.enqueue({ kind: 'reply', text: 'A3' });
      await h.runTurn(session.id, 'Q3');
      assert.deepEqual(messageTexts(lastRequest(h.fake)), [`user: ${SUMMARY_PREFIX}The user asked Q1 and Q2.`, 'user: Q3']);
      const scrollback = await h.page(session.id);
      assert.deepEqual(scrollback.data.map((item: any) => `${item.turn.effect}:${item.turn.userText}`), ['append:Q1', 'append:Q2', 'replace:/compact', 'append:Q3']);
    });

    it('/compact works the same on the Anthropic and Chat Completions dialects', async () => {
      for (const model of ['fake-anthropic', 'fake-chat']) {
        const session = await h.newSession({ model });
        h.fake.enqueue({ kind: 'reply', text: 'A1' }, { kind: 'reply', text: `Summary for ${model}.` }, { kind: 'reply', text: 'A2' });
        await h.runTurn(session.id, 'Q1');
        assert.equal((await h.runTurn(session.id, '/compact')).status, 'completed');
        await h.runTurn(session.id, 'Q2');
        // the system message names the workspace, whose random name may hold "Q1" itself
        const sent = JSON.stringify(lastRequest(h.fake).messages.filter((message: { role: string }) => message.role !== 'system'));
        assert.ok(sent.includes(`Summary for ${model}.`), sent);
        assert.ok(sent.includes('Q2'));
        assert.ok(!sent.includes('Q1') && !sent.includes('A1'), sent);
      }
    });

    it('/compact of an empty context asks nothing and leaves an empty context', async () => {
      const session = await h.newSession();
      const requestsBefore = h.fake.requests.length;
      const compacted = await h.runTurn(session.id, '/compact');
      assert.equal(compacted.status, 'completed');
      assert.equal(h.fake.requests.length, requestsBefore);
      const [entry] = (await h.page(session.id)).data;
      assert.deepEqual([entry.turn.effect, entry.turn.items], ['replace', []]);
    });

    it('treats a command with other words or an attachment as an ordinary prompt', async () => {
      const session = await h.newSession();
      h.fake.enqueue({ kind: 'reply', text: 'ok' });
      await h.runTurn(session.id, '/clear the cache please');
      assert.deepEqual(messageTexts(lastRequest(h.fake)), ['user: /clear the cache please']);
      assert.equal((await h.page(session.id)).data[0].turn.effect, 'append');
      const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
      h.fake.enqueue({ kind: 'reply', text: 'a pixel' });
      const submitted = await h.server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: '/clear', images: [{ mimeType: 'image/png', data: png }] } });
      await waitForTurn(h.server, submitted.json.id);
      assert.deepEqual(messageTexts(lastRequest(h.fake)).slice(-1), ['user: /clear']);
      assert.deepEqual((await h.page(session.id)).data.map((entry: any) => entry.turn.effect), ['append', 'append']);
    });

    it('never compacts on its own when the model has no context window', async () => {
      const session = await h.newSession();
      h.fake.enqueue({ kind: 'reply', text: 'x'.repeat(200_000) }, { kind: 'reply', text: 'fine' });
      await h.runTurn(session.id, 'long');
      const requestsBefore = h.fake.requests.length;
      await h.runTurn(session.id, 'after long');
      assert.equal(h.fake.requests.length, requestsBefore + 1);
      assert.equal(messageTexts(lastRequest(h.fake)).length, 3);
      assert.equal((await h.page(session.id)).total, 2);
    });
  });

  describe(`automatic compaction on ${backend}`, () => {
    let h: Harness;
    // Instructions and tool specs take about 1,400 estimated tokens; the budget is 80% of 4,000.
    before(async () => {
      h = await startHarness(backend, { contextWindow: 4_000 });
    });
    after(async () => h.close());

    it('summarises before a request that would not fit, stores a replace turn, and sends only the summary', async () => {
      const session = await h.newSession();
      const longAnswer = 'word '.repeat(1_600);
      h.fake.enqueue({ kind: 'reply', text: longAnswer });
      await h.runTurn(session.id, 'Tell me everything');
      assert.equal((await h.page(session.id)).total, 1);

      h.fake.enqueue({ kind: 'reply', text: 'They asked for everything.' }, { kind: 'reply', text: 'Short now.' });
      const requestsBefore = h.fake.requests.length;
      const turn = await h.runTurn(session.id, 'And now?');
      assert.equal(turn.status, 'completed');
      assert.equal(h.fake.requests.length, requestsBefore + 2);

      const summaryRequest = h.fake.requests[requestsBefore].body;
      assert.equal(summaryRequest.instructions, SUMMARY_INSTRUCTIONS);
      assert.ok(noTools(summaryRequest));
      assert.deepEqual(messageTexts(summaryRequest).slice(0, 2), ['user: Tell me everything', `assistant: ${longAnswer}`]);
      const turnRequest = h.fake.requests[requestsBefore + 1].body;
      assert.deepEqual(messageTexts(turnRequest), [`user: ${SUMMARY_PREFIX}They asked for everything.`, 'user: And now?']);
      assert.ok(!noTools(turnRequest));

      const reset = await resetEventOf(h, turn.id);
      assert.deepEqual([reset.displayOnly, reset.reason, reset.contextWindow], [true, 'context_window', 4_000]);
      assert.ok(reset.estimatedTokens > 3_200);

      const page = await h.page(session.id);
      assert.deepEqual(page.data.map((entry: any) => `${entry.index}:${entry.turn.effect}:${entry.turn.userText}`), ['0:append:Tell me everything', '1:replace:', '2:append:And now?']);
      assert.equal(page.data[1].turn.items[0].content[0].text, `${SUMMARY_PREFIX}They asked for everything.`);
      assert.equal(page.data[0].turn.assistantText, longAnswer);

      // The summary is small: the next turn needs no compaction and replays summary + turn 2.
      h.fake.enqueue({ kind: 'reply', text: 'Still short.' });
      await h.runTurn(session.id, 'Again');
      assert.deepEqual(messageTexts(lastRequest(h.fake)), [`user: ${SUMMARY_PREFIX}They asked for everything.`, 'user: And now?', 'assistant: Short now.', 'user: Again']);
      assert.equal((await h.page(session.id)).total, 4);

      // A fork through the compaction turn continues from the summary as well.
      const child = (await h.server.request('POST', `/v1/sessions/${session.id}/fork`, { body: { throughTurn: 1 } })).json;
      h.fake.enqueue({ kind: 'reply', text: 'child' });
      await h.runTurn(child.id, 'From the fork');
      assert.deepEqual(messageTexts(lastRequest(h.fake)), [`user: ${SUMMARY_PREFIX}They asked for everything.`, 'user: From the fork']);
    });

    it('compacts from the context figure: the tokens the provider reported, though the text looks short', async () => {
      const session = await h.newSession();
      // a short exchange by its characters, which the provider counted as nearly the whole window
      h.fake.enqueue({ kind: 'reply', text: 'Brief.', usage: { input: 3_100, output: 200 } });
      await h.runTurn(session.id, 'Short question');
      assert.deepEqual((await h.server.request('GET', `/v1/sessions/${session.id}`)).json.context, { usedTokens: 3_300, window: 4_000 });

      h.fake.enqueue({ kind: 'reply', text: 'A short question was asked.' }, { kind: 'reply', text: 'Fits again.' });
      const requestsBefore = h.fake.requests.length;
      const turn = await h.runTurn(session.id, 'Next');
      assert.equal(h.fake.requests.length, requestsBefore + 2, 'a summary first, then the turn');
      assert.equal(h.fake.requests[requestsBefore].body.instructions, SUMMARY_INSTRUCTIONS);
      assert.deepEqual(messageTexts(lastRequest(h.fake)), [`user: ${SUMMARY_PREFIX}A short question was asked.`, 'user: Next']);
      const reset = await resetEventOf(h, turn.id);
      assert.equal(reset.reason, 'context_window');
      assert.ok(reset.estimatedTokens > 3_300, `estimated ${reset.estimatedTokens}: the reported figure and the new message`);
    });

    it('fails the turn and keeps the context when the summary cannot be had', async () => {
      const session = await h.newSession();
      h.fake.enqueue({ kind: 'reply', text: 'word '.repeat(1_600) });
      await h.runTurn(session.id, 'Long one');
      h.fake.enqueue({ kind: 'http-error', status: 400, body: { error: { message: 'bad request', type: 'invalid_request_error' } } });
      const turn = await h.runTurn(session.id, 'Next');
      assert.equal(turn.status, 'failed');
      assert.match(turn.error, /^provider_error/);
      const page = await h.page(session.id);
      assert.deepEqual(page.data.map((entry: any) => entry.turn.effect), ['append', 'append']);
    });
  });
}
