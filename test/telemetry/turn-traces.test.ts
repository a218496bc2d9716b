/**
 * The span tree of one turn with a tool call, exported over OTLP/HTTP to a loopback collector:
 * the client's traceparent → POST …/turns → agentd.turn → chat spans and the tool call, with the
 * GenAI attributes, and no prompt, answer, tool argument or tool output anywhere in the export.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fakeProviderModels, startTestServer, waitForTurn } from '../support/server.ts';
import { startFakeProvider } from '../support/fake-provider.ts';
import { startCollector, type CollectedSpan } from './otlp-collector.ts';

const CLIENT_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CLIENT_SPAN = 'b7ad6b7169203331';
const PROMPT = 'PROMPT-CANARY-4411 list what is here';
const ANSWER = 'ANSWER-CANARY-9902 there is one file';
const FILE_IN_OUTPUT = 'OUTPUT-CANARY-5150.txt';
const ARGUMENT = 'ARGUMENT-CANARY-2323';

describe('the spans of a turn with a tool call', () => {
  it('hang from the client trace through the request and the turn, and carry no text of the conversation', async () => {
    const collector = await startCollector();
    const fake = await startFakeProvider();
    const server = await startTestServer({ models: fakeProviderModels(fake.baseUrl), env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint } });
    let turnId: string;
    try {
      writeFileSync(join(server.workspace, FILE_IN_OUTPUT), 'x');
      fake.enqueue(
        { kind: 'reply', text: 'Looking. ', toolCalls: [
            { name: 'list_dir', arguments: JSON.stringify({ path: '.' }), callId: 'call_list' },
            { name: 'read_file', arguments: JSON.stringify({ path: `${ARGUMENT}.txt` }), callId: 'call_read' },
          ], usage: { input: 50, output: 7 } },
        { kind: 'reply', text: ANSWER, usage: { input: 80, output: 9 } },
      );
      const session = (await server.request('POST', '/v1/sessions', { body: {} })).json;
      const turn = await server.request('POST', `/v1/sessions/${session.id}/turns`, {
        headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` },
        body: { input: PROMPT },
      });
      assert.equal(turn.status, 202);
      turnId = turn.json.id;
      assert.equal((await waitForTurn(server, turnId)).status, 'completed');
      // the tool really ran and saw the file: its output would carry the canary if it were exported
      assert.ok(fake.requests.some((request) => JSON.stringify(request.body).includes(FILE_IN_OUTPUT)));
    } finally {
      // stopping flushes the batch of spans
      await server.close();
      await fake.close();
    }
    try {
      const named = (name: string) => collector.spans.filter((span) => span.name === name);
      const one = (name: string): CollectedSpan => {
        const found = named(name);
        assert.equal(found.length, 1, `${name} in ${collector.spans.map((span) => span.name).join(', ')}`);
        return found[0];
      };
      const post = one('POST /v1/sessions/:id/turns');
      assert.equal(post.traceId, CLIENT_TRACE);
      assert.equal(post.parentSpanId, CLIENT_SPAN);

      const turn = one('agentd.turn');
      assert.equal(turn.traceId, CLIENT_TRACE);
      assert.equal(turn.parentSpanId, post.spanId);
      assert.equal(turn.attributes['agentd.turn.id'], turnId!);
      assert.equal(turn.attributes['agentd.turn.status'], 'completed');

      const chats = named('chat fake-openai-responses-model');
      assert.equal(chats.length, 2);
      for (const chat of chats) {
        assert.equal(chat.traceId, CLIENT_TRACE);
        assert.equal(chat.parentSpanId, turn.spanId);
        assert.equal(chat.attributes['gen_ai.system'], 'fake-openai');
        assert.equal(chat.attributes['gen_ai.request.model'], 'fake-openai-responses-model');
        assert.equal(chat.attributes['gen_ai.operation.name'], 'chat');
      }
      assert.deepEqual(chats.map((chat) => chat.attributes['gen_ai.usage.input_tokens']).sort(), [50, 80]);
      assert.deepEqual(chats.map((chat) => chat.attributes['gen_ai.usage.output_tokens']).sort(), [7, 9]);
      assert.deepEqual(chats[0].attributes['gen_ai.response.finish_reasons'], ['completed']);

      const tool = one('execute_tool list_dir');
      assert.equal(tool.traceId, CLIENT_TRACE);
      assert.equal(tool.parentSpanId, turn.spanId);
      assert.deepEqual(tool.attributes, { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'list_dir', 'gen_ai.tool.call.id': 'call_list', 'agentd.tool.outcome': 'ok' });

      // a file that is not there: the call failed, and says so without its path
      const failed = one('execute_tool read_file');
      assert.equal(failed.parentSpanId, turn.spanId);
      assert.equal(failed.attributes['agentd.tool.outcome'], 'error');

      const everything = collector.bodies.join('\n');
      for (const secret of [PROMPT, 'PROMPT-CANARY', 'ANSWER-CANARY', 'OUTPUT-CANARY', ARGUMENT]) assert.doesNotMatch(everything, new RegExp(secret));
    } finally {
      await collector.close();
    }
  });
});
