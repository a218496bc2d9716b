/**
 * Every recorded provider error body in errors/, served with its HTTP status (from the file name)
 * through the official SDK via an injected fetch, must become the right ProviderError.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { createProviderAdapter } from '../../../src/agent/providers/index.ts';
import { ProviderError, type Dialect, type ModelRequest } from '../../../src/agent/providers/types.ts';
import { fixturePath } from '../../support/fixtures.ts';

const request: ModelRequest = {
  transportModel: 'test-model',
  instructions: '',
  input: [{ type: 'message', role: 'user', content: 'hello' }],
  tools: [],
  effort: null,
};

interface Expectation {
  /** the adapters that can receive this body, with the provider name of the connection */
  via: Array<{ dialect: Dialect; provider: string }>;
  status: number;
  code: string;
  retryable: boolean;
  detail: RegExp;
}

const expectations: Record<string, Expectation> = {
  'anthropic-404-not-found.json': {
    via: [{ dialect: 'anthropic-messages', provider: 'anthropic' }],
    status: 404,
    code: 'not_found_error',
    retryable: false,
    detail: /claude-does-not-exist/,
  },
  'openai-responses-400-invalid-param.json': {
    via: [
      { dialect: 'openai-responses', provider: 'openai' },
      { dialect: 'openai-chat', provider: 'openai' },
    ],
    status: 400,
    code: 'decimal_below_min_value',
    retryable: false,
    detail: /Invalid 'temperature'/,
  },
  'openrouter-429-upstream-rate-limited.json': {
    via: [{ dialect: 'openai-chat', provider: 'openrouter' }],
    status: 429,
    code: '429',
    retryable: true,
    detail: /Provider returned error/,
  },
};

const errorFiles = readdirSync(fixturePath('errors')).filter((name) => name.endsWith('.json')).sort();

test('every recorded error body has an expectation', () => {
  assert.deepEqual(errorFiles, Object.keys(expectations).sort());
});

for (const file of errorFiles) {
  const expected = expectations[file];
  if (!expected) continue;
  for (const { dialect, provider } of expected.via) {
    test(`${file} through the ${dialect} adapter`, async () => {
      const status = Number(/-(\d{3})-/.exec(file)?.[1]);
      assert.equal(status, expected.status, 'the status comes from the file name');
      const body = readFileSync(fixturePath(`errors/${file}`));
      const fetchError: typeof fetch = async () => new Response(body, { status, headers: { 'content-type': 'application/json' } });
      const adapter = await createProviderAdapter(dialect, { provider, baseUrl: 'https://provider.example.test/v1', apiKey: 'sk-test-secret-value' }, { fetch: fetchError });
      let failure: unknown;
      try {
        for await (const event of adapter.stream(request, new AbortController().signal)) assert.fail(`no event expected, got ${event.type}`);
      } catch (error) {
        failure = error;
      }
      assert.ok(failure instanceof ProviderError, 'a ProviderError');
      assert.equal(failure.provider, provider);
      assert.equal(failure.status, expected.status);
      assert.equal(failure.code, expected.code);
      assert.equal(failure.retryable, expected.retryable);
      assert.ok(failure.message.includes(provider), `the message names ${provider}: ${failure.message}`);
      assert.match(failure.message, expected.detail);
      assert.ok(!failure.message.includes('sk-test-secret-value'));
    });
  }
}
