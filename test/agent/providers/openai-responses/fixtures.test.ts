/**
 * Every recorded OpenAI Responses stream in test/fixtures/provider-fixtures, replayed over HTTP by the
 * fake provider and read by the real adapter through the official SDK.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createOpenAIResponsesAdapter } from '../../../../src/agent/providers/openai-responses/adapter.ts';
import { ProviderError, type ProviderAdapter } from '../../../../src/agent/providers/types.ts';
import { type FakeProvider, startFakeProvider } from '../../../support/fake-provider.ts';
import { fixtureResponsesAsSse, listFixtures } from '../../../support/fixtures.ts';
import { caught, collect, modelRequest } from './harness.ts';

let fake: FakeProvider;
let adapter: ProviderAdapter;

before(async () => {
  fake = await startFakeProvider();
  adapter = createOpenAIResponsesAdapter({ provider: 'openai', baseUrl: fake.baseUrl, apiKey: 'sk-test-fixture-key' });
});
after(() => fake.close());

async function replay(path: string, response?: number) {
  fake.enqueue({ kind: 'fixture', path, response });
  return collect(adapter.stream(modelRequest(), new AbortController().signal));
}

const covered = new Set<string>();
function fixtureTest(path: string, body: () => Promise<void>): void {
  covered.add(`openai-responses/${path}`);
  test(path, body);
}

const itemTypes = (items: Array<{ type: string; id?: unknown }>) => items.map((item) => [item.type, item.id]);

describe('OpenAI Responses recordings', () => {
  fixtureTest('text-after-tool-output-gpt4o.sse', async () => {
    const result = await replay('openai-responses/text-after-tool-output-gpt4o.sse');
    assert.equal(result.text, 'The capital of France is Paris.');
    assert.deepEqual(result.toolStarts, []);
    assert.deepEqual(itemTypes(result.items), [['message', 'msg_67e554a28bec8191b56d3e2331eff88006c52f0e511c76ed']]);
    assert.deepEqual(result.items[0].content, [{ type: 'output_text', text: 'The capital of France is Paris.', annotations: [] }]);
    assert.deepEqual(result.done, {
      type: 'response.done',
      responseId: 'resp_67e554a21aa88191b65876ac5e5bbe0406c52f0e511c76ed',
      model: 'gpt-4o-2024-08-06',
      usage: { inputTokens: 278, outputTokens: 9, cachedTokens: 0, cacheCreationTokens: null, reasoningTokens: 0, webSearchRequests: null },
      completion: { status: 'completed' },
      stopReason: 'completed',
    });
    assert.equal(result.events.at(-1)?.type, 'response.done');
  });

  fixtureTest('function-call-gpt4o.sse', async () => {
    const result = await replay('openai-responses/function-call-gpt4o.sse');
    const callId = 'call_kL0PCQV7M2WMoVX8V8OtYSAL';
    assert.deepEqual(result.toolStarts, [{ callId, name: 'get_capital', kind: 'function' }]);
    assert.deepEqual(result.argumentsByCall, { [callId]: '{"country":"France"}' });
    assert.deepEqual(result.items, [{
      type: 'function_call', id: 'fc_67e554a1de488191af0831d35cbe082e0794405d35281ae2', call_id: callId,
      name: 'get_capital', arguments: '{"country":"France"}', status: 'completed',
    }]);
    assert.equal(result.text, '');
    assert.deepEqual(result.done?.usage, { inputTokens: 255, outputTokens: 16, cachedTokens: 0, cacheCreationTokens: null, reasoningTokens: 0, webSearchRequests: null });
    assert.deepEqual(result.done?.completion, { status: 'completed' });
  });

  fixtureTest('function-call-obfuscation-azure-gpt51.chunks.jsonl', async () => {
    const result = await replay('openai-responses/function-call-obfuscation-azure-gpt51.chunks.jsonl');
    const callId = 'call_H5DxLSFnsGhiROnUiDHmgyc8';
    assert.deepEqual(result.toolStarts, [{ callId, name: 'weather', kind: 'function' }]);
    assert.deepEqual(result.argumentsByCall, { [callId]: '{"location":"San Francisco"}' });
    assert.equal(result.items[0].arguments, '{"location":"San Francisco"}');
    assert.equal(result.items[0].call_id, callId);
    assert.equal(result.done?.responseId, 'resp_04041325ab8ae30400698c519fb7fc81979972618138fc336d');
    assert.equal(result.done?.model, 'gpt-5.1');
    assert.deepEqual(result.done?.usage, { inputTokens: 45, outputTokens: 24, cachedTokens: 0, cacheCreationTokens: null, reasoningTokens: 0, webSearchRequests: null });
  });

  fixtureTest('reasoning-encrypted-function-call-gpt5.sse', async () => {
    const result = await replay('openai-responses/reasoning-encrypted-function-call-gpt5.sse');
    const [reasoning, call] = result.items;
    assert.deepEqual(itemTypes(result.items), [
      ['reasoning', 'rs_0050471a34b36ae60068c97bac4dcc819595fd0f80d6b3c405'],
      ['function_call', 'fc_0050471a34b36ae60068c97bf19d9c819590eaf42c0edc1042'],
    ]);
    assert.equal(typeof reasoning.encrypted_content, 'string');
    assert.equal((reasoning.encrypted_content as string).length, 3896);
    assert.ok((reasoning.encrypted_content as string).endsWith('KYQko02bg-rk3VE='));
    assert.deepEqual(reasoning.summary, []);
    assert.equal(call.arguments, '{"result":6666}');
    assert.deepEqual(result.toolStarts, [{ callId: 'call_CWXgs68YprAjp6t0371hiPOI', name: 'final_result', kind: 'function' }]);
    assert.equal(result.argumentsByCall.call_CWXgs68YprAjp6t0371hiPOI, '{"result":6666}');
    assert.deepEqual(result.done?.usage, { inputTokens: 53, outputTokens: 469, cachedTokens: 0, cacheCreationTokens: null, reasoningTokens: 448, webSearchRequests: null });
  });

  fixtureTest('reasoning-summary-text-o3mini.sse', async () => {
    const result = await replay('openai-responses/reasoning-summary-text-o3mini.sse');
    const [reasoning, message] = result.items;
    const summaries = (reasoning.summary as Array<{ text: string }>).map((part) => part.text);
    assert.equal(summaries.length, 4);
    assert.ok(summaries[1].startsWith('**Explaining street crossing safety**'));
    // Summary parts stream as paragraphs of one reasoning text.
    assert.equal(result.reasoning, summaries.join('\n\n'));
    assert.equal(result.reasoning.length, 2028);
    assert.equal((reasoning.encrypted_content as string).length, 440);
    const answer = (message.content as Array<{ text: string }>)[0].text;
    assert.equal(result.text, answer);
    assert.equal(result.text.length, 1251);
    assert.ok(result.text.startsWith("I'm not a road safety professional, but here are some generally accepted guideli"));
    assert.ok(result.text.endsWith('ze yourself with the rules specific to your area. Stay safe!'));
    assert.deepEqual(result.done?.usage, { inputTokens: 13, outputTokens: 1680, cachedTokens: 0, cacheCreationTokens: null, reasoningTokens: 1408, webSearchRequests: null });
    assert.equal(result.done?.model, 'o3-mini-2025-01-31');
  });

  fixtureTest('web-search-call-gpt5.sse', async () => {
    const result = await replay('openai-responses/web-search-call-gpt5.sse');
    assert.deepEqual(result.items.map((item) => item.type), ['reasoning', 'web_search_call', 'reasoning', 'message']);
    assert.deepEqual(result.items[1].action, { type: 'search', query: 'weather: San Francisco, CA', sources: [{ type: 'api', name: 'oai-weather' }] });
    assert.deepEqual(result.toolStarts, [], 'a server-side web search is not a tool the client runs');
    assert.equal((result.items[0].encrypted_content as string).length, 2616);
    assert.equal((result.items[2].encrypted_content as string).length, 2552);
    assert.equal(
      result.text,
      'San Francisco weather today (Tuesday, September 16, 2025): Mostly sunny and pleasant. Current conditions around 71°F; ' +
        'expected high near 73°F and low around 58°F. A light jacket is useful for the cooler evening. ',
    );
    assert.deepEqual(result.done?.usage, { inputTokens: 9463, outputTokens: 582, cachedTokens: 8320, cacheCreationTokens: null, reasoningTokens: 512, webSearchRequests: 1 });
  });

  fixtureTest('error-event-then-failed.chunks.jsonl', async () => {
    const error = await caught(() => replay('openai-responses/error-event-then-failed.chunks.jsonl'));
    assert.ok(error instanceof ProviderError);
    assert.equal(error.code, 'insufficient_quota');
    assert.equal(error.retryable, false, 'a quota failure cannot be fixed by retrying');
    assert.equal(error.status, null);
    assert.equal(error.provider, 'openai');
    assert.match(error.message, /^openai .*You exceeded your current quota/);
  });

  fixtureTest('local-shell-call.chunks.jsonl', async () => {
    const result = await replay('openai-responses/local-shell-call.chunks.jsonl');
    assert.deepEqual(result.toolStarts, [{ callId: 'call_h3nm8hUG0KO9tVNuRACkL1ri', name: 'local_shell', kind: 'function' }]);
    assert.deepEqual(result.items[0], { id: 'rs_68da7fd65a3481948bbb35ff2c79c6c20faf5df54b42d9a6', type: 'reasoning', summary: [] });
    // The final item carries the full argv; the one in output_item.added had an empty command.
    assert.deepEqual(result.items[1], {
      id: 'lsh_68da7fd99b3c8194bd624b18c0c0851b0faf5df54b42d9a6', type: 'local_shell_call', status: 'completed',
      action: { type: 'exec', command: ['ls', '-a', '~'], env: {} }, call_id: 'call_h3nm8hUG0KO9tVNuRACkL1ri',
    });
    assert.deepEqual(result.done?.usage, { inputTokens: 407, outputTokens: 151, cachedTokens: 0, cacheCreationTokens: null, reasoningTokens: 128, webSearchRequests: null });
  });

  fixtureTest('custom-tool-call-input-trimmed.chunks.jsonl', async () => {
    const result = await replay('openai-responses/custom-tool-call-input-trimmed.chunks.jsonl');
    const callId = 'call_g8yRNFvYwhYY5Eb3rGIAxf8l';
    const html = '<main><h1>Streaming custom tool input</h1><p>This must arrive progressively.</p></main>';
    assert.deepEqual(result.toolStarts, [{ callId, name: 'setHtml', kind: 'custom' }]);
    assert.equal(result.argumentsByCall[callId], html);
    assert.equal(result.events.filter((event) => event.type === 'tool.arguments.delta').length, 24);
    assert.deepEqual(result.items, [{
      id: 'ctc_0bbd8ccbe12a7c9b006a61f8e3d35c8192a57844f5fbd26f2d', type: 'custom_tool_call', status: 'completed',
      call_id: callId, input: html, name: 'setHtml',
    }]);
    assert.deepEqual(result.done?.usage, { inputTokens: 93, outputTokens: 51, cachedTokens: 0, cacheCreationTokens: null, reasoningTokens: 0, webSearchRequests: null });
  });

  fixtureTest('lmstudio-local-reasoning-tool-call.chunks.jsonl', async () => {
    const result = await replay('openai-responses/lmstudio-local-reasoning-tool-call.chunks.jsonl');
    assert.equal(
      result.reasoning,
      'The user is asking for the weather in San Francisco. I have a weather function available that takes a location parameter. ' +
        'The user has provided "San Francisco" as the location, so I have all the required information to make the function call.',
    );
    assert.equal(result.text, "I'll get the current weather information for San Francisco for you.");
    assert.deepEqual(result.items.map((item) => item.type), ['reasoning', 'message', 'function_call']);
    // LM Studio sends the arguments only in function_call_arguments.done: they still arrive as one delta.
    assert.deepEqual(result.toolStarts, [{ callId: 'call_2025306790300011', name: 'weather', kind: 'function' }]);
    assert.deepEqual(result.argumentsByCall, { call_2025306790300011: '{"location":"San Francisco"}' });
    assert.equal(result.items[2].arguments, '{"location":"San Francisco"}');
    assert.deepEqual(result.done?.usage, { inputTokens: 182, outputTokens: 61, cachedTokens: 2, cacheCreationTokens: null, reasoningTokens: 48, webSearchRequests: null });
    assert.equal(result.done?.model, 'zai-org/glm-4.7-flash');
  });

  fixtureTest('commentary-message-then-function-call-gpt55.sse', async () => {
    const result = await replay('openai-responses/commentary-message-then-function-call-gpt55.sse');
    const [reasoning, message, call] = result.items;
    assert.deepEqual(result.items.map((item) => item.type), ['reasoning', 'message', 'function_call']);
    assert.equal((reasoning.encrypted_content as string).length, 1080);
    assert.equal(message.phase, 'commentary', 'the phase marker is kept for replay');
    assert.equal(result.text, 'I’ll check the capital lookup tool for “PotatoLand.”');
    assert.deepEqual(result.toolStarts, [{ callId: 'call_LabG58Uhrq9kZvR52BYKjToD', name: 'get_capital', kind: 'function' }]);
    assert.equal(result.argumentsByCall.call_LabG58Uhrq9kZvR52BYKjToD, '{"country":"PotatoLand"}');
    assert.equal(call.arguments, '{"country":"PotatoLand"}');
    assert.deepEqual(result.done?.usage, { inputTokens: 63, outputTokens: 69, cachedTokens: 0, cacheCreationTokens: 0, reasoningTokens: 26, webSearchRequests: null });
    assert.equal(result.done?.model, 'gpt-5.5-2026-04-23');
  });

  fixtureTest('reasoning-encrypted-store-false-4-steps.chunks.jsonl', async () => {
    const path = 'openai-responses/reasoning-encrypted-store-false-4-steps.chunks.jsonl';
    assert.equal(fixtureResponsesAsSse(path).length, 4);
    const steps = [];
    for (let response = 0; response < 4; response++) steps.push(await replay(path, response));

    const [first, second, third, fourth] = steps;
    assert.equal(first.items[0].type, 'reasoning');
    // The blob is 844 characters in output_item.added and 1060 in output_item.done: the done copy is kept.
    assert.equal((first.items[0].encrypted_content as string).length, 1060);
    assert.ok((first.items[0].encrypted_content as string).endsWith('nObfNxat0wz4uQ=='));
    assert.equal(
      first.reasoning,
      "**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7, then multiply the result by 3, and finally multiply that by 10, reporting the final product.",
    );
    const calls = [first, second, third].map((step) => [step.toolStarts[0].callId, step.items.at(-1)?.arguments]);
    assert.deepEqual(calls, [
      ['call_AB6AaRZ1FYZB2RwS6A5vbdqn', '{"a":12,"b":7,"op":"add"}'],
      ['call_Q6pW65MUgW9vF59BmItYGos3', '{"a":19,"b":3,"op":"multiply"}'],
      ['call_Zl5vIMnD7dVAjgU6FkhmiCZh', '{"a":57,"b":10,"op":"multiply"}'],
    ]);
    for (const step of [first, second, third]) assert.equal(step.argumentsByCall[step.toolStarts[0].callId], step.items.at(-1)?.arguments);
    assert.equal(fourth.text, 'The final result is **570**.');
    assert.deepEqual(fourth.toolStarts, []);
    // Each response is billed on its own.
    assert.deepEqual(steps.map((step) => [step.done?.usage?.inputTokens, step.done?.usage?.outputTokens]), [[134, 28], [221, 26], [260, 26], [299, 12]]);
    assert.deepEqual(new Set(steps.map((step) => step.done?.responseId)).size, 4);
  });

  fixtureTest('reasoning-encrypted-store-false-4-steps.chunks.jsonl (whole file)', async () => {
    // Fed as one body, the adapter stops at the first terminal event: one call reads one response.
    const result = await replay('openai-responses/reasoning-encrypted-store-false-4-steps.chunks.jsonl');
    assert.equal(result.done?.responseId, 'resp_01830d662ab3856501693c321345c88190b0de00f3b9975691');
    assert.deepEqual(result.items.map((item) => item.type), ['reasoning', 'function_call']);
    assert.equal(result.events.filter((event) => event.type === 'response.done').length, 1);
  });

  test('every recording under openai-responses/ is covered above', () => {
    assert.deepEqual(listFixtures()['openai-responses'].filter((path) => !covered.has(path)), []);
  });
});
