import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import {
  isAbortError,
  providerErrorFromHttp,
  providerErrorFromStreamPayload,
  redactSecrets,
  streamEndedEarlyError,
  toProviderError,
} from '../../../src/agent/providers/provider-error.ts';
import { ProviderError } from '../../../src/agent/providers/types.ts';
import { OPENAI_RATE_LIMITS } from '../../../src/agent/providers/openai-responses/rate-limits.ts';
import { ANTHROPIC_RATE_LIMITS } from '../../../src/agent/providers/anthropic-messages/rate-limits.ts';
import { fixturePath } from '../../support/fixtures.ts';

const openai = { provider: 'openai', apiKey: 'sk-proj-secret-key-0123456789', sdk: OpenAI, rateLimits: OPENAI_RATE_LIMITS };
const anthropic = { provider: 'anthropic', apiKey: 'sk-ant-api03-secret-0123456789', sdk: Anthropic, rateLimits: ANTHROPIC_RATE_LIMITS };
const readJson = (relative: string) => JSON.parse(readFileSync(fixturePath(relative), 'utf8'));

describe('HTTP errors from the SDKs', () => {
  test('retryable statuses: 408, 409, 429, 5xx and 529', () => {
    const retryable = [400, 401, 403, 404, 408, 409, 422, 429, 500, 503, 504, 529].map((status) => {
      const sdkError = OpenAI.APIError.generate(status, { error: { message: 'x' } }, undefined, new Headers());
      return [status, toProviderError(sdkError, openai).retryable];
    });
    assert.deepEqual(retryable, [
      [400, false], [401, false], [403, false], [404, false], [408, true], [409, true],
      [422, false], [429, true], [500, true], [503, true], [504, true], [529, true],
    ]);
  });

  test('an Anthropic 529 overloaded_error is retryable and keeps its retry-after', () => {
    const body = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };
    const error = toProviderError(Anthropic.APIError.generate(529, body, undefined, new Headers({ 'retry-after': '4' })), anthropic);
    assert.ok(error instanceof ProviderError);
    assert.deepEqual([error.provider, error.status, error.code, error.retryable, error.retryAfterMs], ['anthropic', 529, 'overloaded_error', true, 4000]);
    assert.equal(error.message, 'anthropic returned HTTP 529 (overloaded_error): Overloaded');
  });

  test('billing failures are permanent even with a retryable status', () => {
    const quota = OpenAI.APIError.generate(429, { error: { type: 'insufficient_quota', code: 'insufficient_quota', message: 'Quota' } }, undefined, new Headers());
    const billing = Anthropic.APIError.generate(402, { type: 'error', error: { type: 'billing_error', message: 'Pay up' } }, undefined, new Headers());
    const spendCap = Anthropic.APIError.generate(
      429,
      { type: 'error', error: { type: 'rate_limit_error', message: 'Spend limit', details: { error_code: 'enforced_spend_limit_reached' } } },
      undefined,
      new Headers({ 'retry-after': '30' }),
    );
    assert.deepEqual([toProviderError(quota, openai).retryable, toProviderError(quota, openai).code], [false, 'insufficient_quota']);
    assert.deepEqual([toProviderError(billing, anthropic).retryable, toProviderError(billing, anthropic).code], [false, 'billing_error']);
    assert.deepEqual([toProviderError(spendCap, anthropic).retryable, toProviderError(spendCap, anthropic).code], [false, 'enforced_spend_limit_reached']);
  });

  test('x-should-retry overrides the status rule', () => {
    const headers = (value: string) => new Headers({ 'x-should-retry': value });
    assert.equal(providerErrorFromHttp(openai, 500, {}, headers('false')).retryable, false);
    assert.equal(providerErrorFromHttp(openai, 400, {}, headers('true')).retryable, true);
  });

  test('the recorded error bodies of all three providers', () => {
    const badParam = providerErrorFromHttp(openai, 400, readJson('errors/openai-responses-400-invalid-param.json'), null);
    assert.deepEqual([badParam.code, badParam.retryable], ['decimal_below_min_value', false]);
    const notFound = providerErrorFromHttp(anthropic, 404, readJson('errors/anthropic-404-not-found.json'), null);
    assert.deepEqual([notFound.code, notFound.retryable], ['not_found_error', false]);
    const upstream = providerErrorFromHttp({ provider: 'openrouter' }, 429, readJson('errors/openrouter-429-upstream-rate-limited.json'), null);
    assert.deepEqual([upstream.code, upstream.retryable], ['429', true], 'OpenRouter sends a numeric code');
    assert.match(upstream.message, /^openrouter returned HTTP 429 \(429\): Provider returned error$/);
  });

  test('a body given as raw text is parsed; a non-JSON body becomes the message', () => {
    assert.equal(providerErrorFromHttp(openai, 400, '{"error":{"code":"bad","message":"m"}}', null).code, 'bad');
    const gateway = providerErrorFromHttp(openai, 502, '<html>Bad Gateway</html>', null);
    assert.deepEqual([gateway.code, gateway.retryable], ['http_502', true]);
    assert.match(gateway.message, /Bad Gateway/);
  });
});

describe('errors inside a 200 stream', () => {
  test('OpenAI nested and flat error events, response.failed errors', () => {
    const nested = providerErrorFromStreamPayload(openai, { type: 'error', error: { type: 'insufficient_quota', code: 'insufficient_quota', message: 'Quota' } });
    assert.deepEqual([nested.code, nested.retryable, nested.status], ['insufficient_quota', false, null]);
    const flat = providerErrorFromStreamPayload(openai, { type: 'error', code: 'rate_limit_exceeded', message: 'Slow down' });
    assert.deepEqual([flat.code, flat.retryable], ['rate_limit_exceeded', true]);
    const failed = providerErrorFromStreamPayload(openai, { code: 'server_error', message: 'Oops' });
    assert.deepEqual([failed.code, failed.retryable], ['server_error', true]);
  });

  test('Anthropic overloaded_error and Groq tool_use_failed', () => {
    const overloaded = providerErrorFromStreamPayload(anthropic, { type: 'error', error: { details: null, type: 'overloaded_error', message: 'Overloaded' } });
    assert.deepEqual([overloaded.code, overloaded.retryable], ['overloaded_error', true]);
    const groq = { error: { message: 'Tool call validation failed', type: 'invalid_request_error', code: 'tool_use_failed', status_code: 400 } };
    const toolUseFailed = providerErrorFromStreamPayload({ provider: 'groq' }, groq);
    assert.deepEqual([toolUseFailed.code, toolUseFailed.retryable], ['tool_use_failed', false]);
  });

  test('a status-less SDK APIError (what the SDK throws for an error event) is treated as a stream error', () => {
    const thrown = new OpenAI.APIError(undefined, { type: 'server_error', code: 'server_error', message: 'Boom' }, undefined, new Headers());
    const error = toProviderError(thrown, openai);
    assert.deepEqual([error.status, error.code, error.retryable], [null, 'server_error', true]);
  });

  test('a stream that ended early is retryable', () => {
    const error = streamEndedEarlyError('openai');
    assert.deepEqual([error.code, error.retryable, error.provider], ['stream_ended_early', true, 'openai']);
  });
});

describe('connection failures and other throwables', () => {
  test('SDK connection errors and undici socket errors are retryable', () => {
    const sdk = toProviderError(new OpenAI.APIConnectionError({ message: 'Connection error.' }), openai);
    assert.deepEqual([sdk.code, sdk.retryable], ['connection_error', true]);
    const untrusted = Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    const tls = toProviderError(new Anthropic.APIConnectionError({ message: 'Connection error.', cause: untrusted }), anthropic);
    assert.match(tls.message, /connection failed \(connection_error\): Connection error\.: self-signed certificate$/);
    const timeout = toProviderError(new Anthropic.APIConnectionTimeoutError(), anthropic);
    assert.deepEqual([timeout.code, timeout.retryable], ['timeout', true]);
    const socket = Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });
    const terminated = toProviderError(new TypeError('terminated', { cause: socket }), openai);
    assert.deepEqual([terminated.code, terminated.retryable], ['connection_error', true]);
    assert.match(terminated.message, /terminated: other side closed/);
  });

  test('unknown errors are not retried; ProviderErrors pass through unchanged', () => {
    const bug = toProviderError(new RangeError('bad index'), openai);
    assert.deepEqual([bug.code, bug.retryable], ['unexpected_error', false]);
    const original = streamEndedEarlyError('openai');
    assert.equal(toProviderError(original, openai), original);
  });

  test('abort errors are recognised', () => {
    const controller = new AbortController();
    controller.abort();
    assert.equal(isAbortError(controller.signal.reason), true);
    assert.equal(isAbortError(new OpenAI.APIUserAbortError()), true);
    assert.equal(isAbortError(new Error('x')), false);
  });
});

describe('secrets never reach a message', () => {
  test('the connection key and key-shaped strings are scrubbed', () => {
    const body = { error: { message: `Incorrect API key provided: ${openai.apiKey}. Also sk-other-abcdef123456 and Bearer tok_123` } };
    const error = providerErrorFromHttp(openai, 401, body, null);
    assert.ok(!error.message.includes(openai.apiKey));
    assert.ok(!error.message.includes('sk-other-abcdef123456'));
    assert.ok(!error.message.includes('tok_123'));
    assert.match(error.message, /^openai returned HTTP 401/);
  });

  test('a key that does not look like one is still scrubbed when it is the connection key', () => {
    assert.equal(redactSecrets('token=plainlocalkey99 rejected', 'plainlocalkey99'), 'token=[redacted] rejected');
    assert.equal(redactSecrets('masked sk-proj-****abcd', null), 'masked [redacted]');
  });

  test('very long messages are shortened', () => {
    const error = providerErrorFromStreamPayload(openai, { code: 'server_error', message: 'x'.repeat(5000) });
    assert.ok(error.message.length <= 1001);
  });
});
