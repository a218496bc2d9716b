/**
 * Correlation (CONTRACT.md §19) through the real server and the fake providers: `tool.output.updated`
 * names its call (`callId`), and text, reasoning and tool events carry `itemId`, the provider's id
 * of the output item, in the dialect that gives one (OpenAI Responses: the same id as the item in
 * history); Anthropic Messages and Chat Completions give none, and the field is absent.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { waitForTurn, type TestServer } from '../support/server.ts';
import type { FakeProvider } from '../support/fake-provider.ts';
import { useFakeServer } from '../support/harness.ts';
import { readHistoryRange } from '../../src/store/history.ts';
import type { EventOfType } from '../../src/client/index.ts';

const MODEL_OF = { 'openai-responses': 'fake-responses', 'anthropic-messages': 'fake-anthropic', 'openai-chat': 'fake-chat' } as const;
const DIALECTS = Object.keys(MODEL_OF) as (keyof typeof MODEL_OF)[];
const TOOL_EVENTS = ['tool.started', 'tool.arguments.updated', 'tool.updated', 'tool.output.updated', 'tool.finished'];

describe('correlation of streamed events', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  const harness = useFakeServer({ confinement: 'off' });
  before(() => ({ fake, server } = harness));

  for (const dialect of DIALECTS) {
    it(`${dialect}: tool.output.updated names its call; itemId ${dialect === 'openai-responses' ? 'is the history item\'s id' : 'is absent'}`, async () => {
      const session = await harness.newSession({ model: MODEL_OF[dialect] });
      const callId = `call_echo_${dialect.replaceAll('-', '_')}`;
      fake.enqueue(
        { kind: 'reply', reasoning: 'Let me look.', text: 'Running it.', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: 'echo correlated-output' }), callId }] },
        { kind: 'reply', text: 'It printed it.' },
      );
      const turn = await harness.submit(session.id, `correlate ${dialect}`);
      assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
      const events = harness.events.ofTurn(turn.id).map((event) => event.data);
      const ofType = (type: string) => events.filter((event) => event.type === type).map((event) => event.data);

      const outputs = ofType('tool.output.updated');
      assert.ok(outputs.length > 0 && outputs.some((output) => output.output.includes('correlated-output')));
      assert.ok(outputs.every((output) => output.callId === callId), 'every output names its call');

      const [entry] = await readHistoryRange(server.server.store.db, session.id, 0, 1);
      const firstOfType = (type: string) => entry.items.find((item: any) => item.type === type) as any;
      const texts = ofType('response.text.delta');
      const reasonings = ofType('response.reasoning.delta');
      const tools = TOOL_EVENTS.flatMap(ofType);
      assert.ok(texts.length > 0 && reasonings.length > 0 && tools.length >= TOOL_EVENTS.length);
      if (dialect === 'openai-responses') {
        const answerIds = entry.items.filter((item: any) => item.type === 'message' && item.role === 'assistant').map((item: any) => item.id);
        assert.ok(texts.every((delta) => answerIds.includes(delta.itemId)), 'text deltas name their message item');
        assert.deepEqual(new Set(reasonings.map((delta) => delta.itemId)), new Set([firstOfType('reasoning').id]));
        const callItemId = firstOfType('function_call').id;
        assert.match(callItemId, /\S/);
        assert.notEqual(callItemId, callId, 'the item id is not the call id');
        assert.ok(tools.every((event) => event.itemId === callItemId), 'every tool event names the call\'s item');
      } else {
        for (const event of [...texts, ...reasonings, ...tools]) assert.equal('itemId' in event, false, JSON.stringify(event));
      }
    });
  }

  it('the OpenAPI event union and the SDK types carry callId and itemId', async () => {
    const document = (await server.request('GET', '/openapi.json')).json;
    const branches = document.components.schemas.EventEnvelope.oneOf ?? document.components.schemas.EventEnvelope.anyOf;
    const dataOf = (type: string) => branches.find((branch: any) => branch.properties.type.const === type || branch.properties.type.enum?.[0] === type).properties.data;
    const output = dataOf('tool.output.updated');
    assert.ok(output.required.includes('callId'));
    // the SDK's types name them too (this file does not compile without)
    const sdkOutput: EventOfType<'tool.output.updated'>['data'] = { callId: 'call_1', name: 'shell', output: '', truncated: false, itemId: 'fc_1' };
    const sdkDelta: EventOfType<'response.text.delta'>['data'] = { text: '', truncated: false, itemId: 'msg_1' };
    assert.deepEqual([sdkOutput.callId, sdkDelta.itemId], ['call_1', 'msg_1']);
    for (const type of ['response.text.delta', 'response.reasoning.delta', ...TOOL_EVENTS]) {
      const data = dataOf(type);
      assert.equal(data.properties.itemId.type, 'string', type);
      assert.ok(!(data.required ?? []).includes('itemId'), `${type}: itemId is optional`);
    }
  });
});
