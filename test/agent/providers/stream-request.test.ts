/**
 * The streaming POST sent without the SDK clients must fail exactly as they fail: for every refusal
 * a provider sends, the error is compared with the one the SDK's own client throws for the same
 * response from the same loopback server.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { joinUrl, postForStream } from '../../../src/agent/providers/stream-request.ts';

interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

let server: Server;
let base: string;
let reply: Reply = { status: 200, headers: {}, body: '' };
const seen: Array<{ url: string; headers: IncomingMessage['headers']; body: string }> = [];

before(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      seen.push({ url: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      response.writeHead(reply.status, reply.headers);
      response.end(reply.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(() => new Promise<void>((resolve) => server.close(() => resolve())));

const REFUSALS: Array<[string, Reply]> = [
  ['a rate limit with retry-after', { status: 429, headers: { 'content-type': 'application/json', 'retry-after': '7', 'x-request-id': 'req_429' }, body: '{"error":{"message":"Rate limit reached","type":"rate_limit_error","code":"rate_limit_exceeded"}}' }],
  ['a bad request', { status: 400, headers: { 'content-type': 'application/json' }, body: '{"error":{"message":"Unknown parameter","type":"invalid_request_error","param":"foo"}}' }],
  ['a refused key', { status: 401, headers: { 'content-type': 'application/json' }, body: '{"error":{"message":"Incorrect API key","type":"authentication_error"}}' }],
  ['an overloaded server', { status: 529, headers: { 'content-type': 'application/json' }, body: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}' }],
  ['a gateway page that is not JSON', { status: 502, headers: { 'content-type': 'text/html' }, body: '<html>Bad gateway</html>' }],
  ['an empty 404', { status: 404, headers: {}, body: '' }],
];

async function caught(run: () => Promise<unknown>): Promise<Error> {
  try {
    await run();
  } catch (error) {
    return error as Error;
  }
  assert.fail('expected a failure');
}

/** What a caller reads of an SDK error. */
function shape(error: Error): Record<string, unknown> {
  const fields = error as unknown as Record<string, unknown>;
  const headers = fields.headers as Headers | undefined;
  return {
    class: error.constructor.name,
    message: error.message,
    status: fields.status,
    error: fields.error,
    type: fields.type,
    code: fields.code,
    retryAfter: headers?.get('retry-after') ?? null,
    requestId: fields.requestID ?? null,
  };
}

describe('a refused streaming request fails as the SDK client fails', () => {
  for (const [what, refusal] of REFUSALS) {
    test(`openai: ${what}`, async () => {
      reply = refusal;
      const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'k', maxRetries: 0 });
      const theSdks = await caught(() => client.post('/responses', { body: { model: 'm' }, stream: true }));
      const ours = await caught(() => postForStream({ baseUrl: `${base}/v1`, path: '/responses', headers: {}, body: '{"model":"m"}', signal: new AbortController().signal }, OpenAI));
      assert.ok(ours instanceof OpenAI.APIError);
      assert.deepEqual(shape(ours), shape(theSdks));
    });

    test(`anthropic: ${what}`, async () => {
      reply = refusal;
      const client = new Anthropic({ baseURL: base, apiKey: 'k', maxRetries: 0 });
      const theSdks = await caught(() => client.messages.create({ model: 'm', max_tokens: 10, messages: [], stream: true }));
      const ours = await caught(() => postForStream({ baseUrl: base, path: '/v1/messages', headers: {}, body: '{}', signal: new AbortController().signal }, Anthropic));
      assert.ok(ours instanceof Anthropic.APIError);
      assert.deepEqual(shape(ours), shape(theSdks));
    });
  }

  test('a refused connection is the SDK’s APIConnectionError, with its cause', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'k', maxRetries: 0 });
    const theSdks = await caught(() => client.post('/responses', { body: {}, stream: true }));
    const ours = await caught(() => postForStream({ baseUrl: `http://127.0.0.1:${port}/v1`, path: '/responses', headers: {}, body: '{}', signal: new AbortController().signal }, OpenAI));
    assert.equal(ours.constructor, theSdks.constructor);
    assert.equal(ours.constructor.name, 'APIConnectionError');
    assert.match(String((ours.cause as { code?: string }).code), /ECONNREFUSED/);
  });

  test('an aborted request fails with the signal’s reason, before and while it is sent', async () => {
    const before = new AbortController();
    before.abort(new Error('cancelled first'));
    await assert.rejects(postForStream({ baseUrl: base, path: '/x', headers: {}, body: '{}', signal: before.signal }, OpenAI), /cancelled first/);
    reply = { status: 200, headers: { 'content-type': 'text/event-stream' }, body: '' };
    const during = new AbortController();
    const sent = postForStream({ baseUrl: base, path: '/x', headers: {}, body: '{}', signal: during.signal }, OpenAI, (input, init) => {
      during.abort(new Error('cancelled while sending'));
      return fetch(input, init);
    });
    await assert.rejects(sent, /cancelled while sending/);
  });
});

describe('what is sent', () => {
  test('the dialect’s headers with JSON content, to the base URL and path joined as the SDKs join them', async () => {
    reply = { status: 200, headers: { 'content-type': 'text/event-stream' }, body: 'data: [DONE]\n\n' };
    const response = await postForStream({ baseUrl: `${base}/v1/`, path: '/responses', headers: { authorization: 'Bearer sk-1' }, body: '{"a":1}', signal: new AbortController().signal }, OpenAI);
    const chunks: Uint8Array[] = [];
    for await (const chunk of response.body ?? []) chunks.push(chunk);
    assert.equal(Buffer.concat(chunks).toString('utf8'), 'data: [DONE]\n\n');
    const request = seen.at(-1)!;
    assert.equal(request.url, '/v1/responses');
    assert.equal(request.body, '{"a":1}');
    assert.equal(request.headers.authorization, 'Bearer sk-1');
    assert.equal(request.headers['content-type'], 'application/json');
    assert.equal(request.headers.accept, 'application/json');
    assert.equal(request.headers['user-agent'], 'agentd');
  });

  test('joinUrl keeps exactly one slash between base and path', () => {
    assert.equal(joinUrl('http://h/v1', '/responses'), 'http://h/v1/responses');
    assert.equal(joinUrl('http://h/v1/', '/responses'), 'http://h/v1/responses');
    assert.equal(joinUrl('http://h', '/v1/messages'), 'http://h/v1/messages');
  });
});
