/**
 * /metrics scraped around real turns: the turn, token, model-request, tool-call, human-request and
 * subscriber metrics move with what the server did, and a tool name the model made up does not
 * become a label.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS } from '../support/backends.ts';
import { waitForTurn, type TestServer } from '../support/server.ts';
import type { FakeProvider } from '../support/fake-provider.ts';
import { useFakeServer } from '../support/harness.ts';
import { http } from '../support/http.ts';
import { sample } from './prometheus-text.ts';

const USAGE = { input: 120, output: 30, cached: 20 };

for (const backend of BACKENDS) {
  describe(`turn metrics on ${backend}`, () => {
    let fake!: FakeProvider;
    let server!: TestServer;
    const harness = useFakeServer({ backend, args: ['--metrics-port', '0'] });
    before(() => ({ fake, server } = harness));
    const { newSession, submit, resolve, nthRequestOf } = harness;

    const scrape = async () => {
      const response = await http('GET', server.server.metricsUrl!);
      assert.equal(response.status, 200);
      return response.text;
    };
    const moved = (before: string, after: string, name: string, labels: Record<string, string> = {}) => (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);

    it('count a turn with an approved tool call, its tokens and model requests; the pending request gauge goes 1 then 0', async () => {
      const session = await newSession();
      const before = await scrape();
      fake.enqueue(
        { kind: 'reply', text: 'Making it. ', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['touch', 'metrics.txt'] }), callId: 'call_touch' }], usage: USAGE },
        { kind: 'reply', text: 'Done.', usage: USAGE },
      );
      const turn = await submit(session.id, 'make a file');
      const request = await nthRequestOf(turn.id, 1);
      const waiting = await scrape();
      assert.equal(sample(waiting, 'agentd_human_requests_pending'), 1);
      assert.equal(sample(waiting, 'agentd_turns_running'), 1);
      assert.equal((await resolve(request.id, { decision: 'allow_once' })).status, 200);
      assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
      const after = await scrape();

      assert.equal(sample(after, 'agentd_human_requests_pending'), 0);
      assert.equal(sample(after, 'agentd_turns_running'), 0);
      assert.equal(moved(before, after, 'agentd_turns_total', { status: 'completed' }), 1);
      assert.equal(moved(before, after, 'agentd_turn_duration_seconds_count'), 1);
      assert.equal(moved(before, after, 'agentd_tokens_total', { kind: 'input' }), 2 * USAGE.input);
      assert.equal(moved(before, after, 'agentd_tokens_total', { kind: 'output' }), 2 * USAGE.output);
      assert.equal(moved(before, after, 'agentd_tokens_total', { kind: 'cached' }), 2 * USAGE.cached);
      assert.equal(moved(before, after, 'agentd_model_requests_total', { provider: 'fake-openai', status: 'ok' }), 2);
      assert.equal(moved(before, after, 'agentd_model_request_duration_seconds_count', { phase: 'first_byte' }), 2);
      assert.equal(moved(before, after, 'agentd_model_request_duration_seconds_count', { phase: 'end' }), 2);
      assert.equal(moved(before, after, 'agentd_tool_calls_total', { tool: 'shell', outcome: 'ok' }), 1);
      // the harness keeps one event stream open
      assert.equal(sample(after, 'agentd_event_subscribers'), 1);
    });

    it('count a denied call as denied, a made-up tool under one fixed label, and a provider failure as an error', async () => {
      const session = await newSession();
      const before = await scrape();
      fake.enqueue(
        {
          kind: 'reply',
          toolCalls: [
            { name: 'shell', arguments: JSON.stringify({ command: ['touch', 'denied.txt'] }), callId: 'call_denied' },
            { name: 'tool_the_model_invented_7f3a', arguments: '{}', callId: 'call_invented' },
          ],
        },
        { kind: 'http-error', status: 400, body: { error: { message: 'bad request' } } },
      );
      const turn = await submit(session.id, 'try things');
      const request = await nthRequestOf(turn.id, 1);
      assert.equal((await resolve(request.id, { decision: 'deny' })).status, 200);
      assert.equal((await waitForTurn(server, turn.id)).status, 'failed');
      const after = await scrape();
      assert.equal(moved(before, after, 'agentd_tool_calls_total', { tool: 'shell', outcome: 'denied' }), 1);
      assert.equal(moved(before, after, 'agentd_tool_calls_total', { tool: 'unknown', outcome: 'error' }), 1);
      assert.doesNotMatch(after, /tool_the_model_invented/);
      assert.equal(moved(before, after, 'agentd_model_requests_total', { provider: 'fake-openai', status: 'error' }), 1);
      assert.equal(moved(before, after, 'agentd_turns_total', { status: 'failed' }), 1);
      assert.equal(sample(after, 'agentd_human_requests_pending'), 0);
    });

    it('close a pending request when its turn is cancelled', async () => {
      const session = await newSession();
      fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['touch', 'never.txt'] }), callId: 'call_never' }] });
      const turn = await submit(session.id, 'then cancel');
      await nthRequestOf(turn.id, 1);
      assert.equal(sample(await scrape(), 'agentd_human_requests_pending'), 1);
      assert.equal((await server.request('POST', `/v1/turns/${turn.id}/cancel`)).json.status, 'cancelled');
      const after = await scrape();
      assert.equal(sample(after, 'agentd_human_requests_pending'), 0);
      assert.ok((sample(after, 'agentd_turns_total', { status: 'cancelled' }) ?? 0) >= 1);
    });
  });
}
