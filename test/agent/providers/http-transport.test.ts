/**
 * Requests to providers over node:http(s), against real loopback servers: what a provider's
 * stream needs (streamed bodies, keep-alive, aborts, dropped connections, TLS) and what a refusal
 * is read from (status, header lines, body).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { providerRequest, responseHeaders } from '../../../src/agent/providers/http-transport.ts';
import { createOpenAIResponsesAdapter } from '../../../src/agent/providers/openai-responses/adapter.ts';
import { ProviderError } from '../../../src/agent/providers/types.ts';
import { caught, collect, modelRequest } from './openai-responses/harness.ts';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  remotePort: number;
}

let server: Server;
let base: string;
const seen: Seen[] = [];
/** resolves when the server is told to send the rest of a held response */
let release: () => void = () => {};

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

async function route(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const body = await readBody(request);
  seen.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body, remotePort: request.socket.remotePort ?? 0 });
  switch (request.url) {
    case '/echo':
      response.writeHead(201, 'Made', { 'content-type': 'application/json', 'x-request-id': 'req_123', 'retry-after': '7' });
      return void response.end(JSON.stringify({ got: body }));
    case '/held':
      // the first event now, the rest only when the test says so
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('data: first\n\n');
      release = () => response.end('data: second\n\n');
      return;
    case '/dropped':
      response.writeHead(200, { 'content-type': 'text/event-stream', 'content-length': '1000' });
      response.write('data: partial\n\n');
      setTimeout(() => response.socket?.destroy(), 20);
      return;
    case '/never':
      return; // no answer at all
    default:
      response.writeHead(404);
      response.end();
  }
}

before(async () => {
  server = createServer((request, response) => void route(request, response));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});

function send(path: string, options: { headers?: Record<string, string>; body?: string; signal?: AbortSignal; target?: string } = {}) {
  const body = options.body ?? '{}';
  return providerRequest(`${options.target ?? base}${path}`, { method: 'POST', headers: options.headers ?? { 'content-type': 'application/json' }, body: Buffer.from(body), signal: options.signal ?? null });
}

async function textOf(response: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of response) text += String(chunk);
  return text;
}

describe('requests and responses', () => {
  test('sends method, headers and the body with its length; answers status, status text, header lines and body', async () => {
    const response = await send('/echo', { headers: { 'content-type': 'application/json', authorization: 'Bearer k' }, body: '{"é":1}' });
    const request = seen.at(-1)!;
    assert.equal(request.method, 'POST');
    assert.equal(request.headers.authorization, 'Bearer k');
    assert.equal(request.headers['content-length'], String(Buffer.byteLength('{"é":1}')));
    assert.equal(request.headers['transfer-encoding'], undefined);
    assert.equal(request.headers['accept-encoding'], undefined, 'nothing asked to arrive compressed');
    assert.equal(request.body, '{"é":1}');
    assert.equal(response.statusCode, 201);
    assert.equal(response.statusMessage, 'Made');
    const headers = responseHeaders(response);
    assert.equal(headers.get('x-request-id'), 'req_123');
    assert.equal(headers.get('retry-after'), '7');
    assert.deepEqual(JSON.parse(await textOf(response)), { got: '{"é":1}' });
  });

  test('hands the body over as it arrives, not when it ends', async () => {
    const chunks = (await send('/held'))[Symbol.asyncIterator]();
    assert.equal(String((await chunks.next()).value), 'data: first\n\n');
    release();
    assert.equal(String((await chunks.next()).value), 'data: second\n\n');
    assert.equal((await chunks.next()).done, true);
  });

  test('keeps the connection alive between requests', async () => {
    await textOf(await send('/echo', { body: 'a' }));
    await textOf(await send('/echo', { body: 'b' }));
    const [first, second] = seen.slice(-2);
    assert.equal(first.remotePort, second.remotePort, 'the second request came over the first one’s socket');
  });
});

describe('failures', () => {
  test('an abort before the response rejects with the signal’s reason and closes the request', async () => {
    const controller = new AbortController();
    const pending = send('/never', { signal: controller.signal });
    await waitFor(() => seen.at(-1)?.url === '/never');
    const reason = new DOMException('stop', 'AbortError');
    controller.abort(reason);
    await assert.rejects(pending, (error) => error === reason);
  });

  test('an already aborted signal sends nothing', async () => {
    const before = seen.length;
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(send('/echo', { signal: controller.signal }), { name: 'AbortError' });
    assert.equal(seen.length, before);
  });

  test('an abort while the body streams fails the read with the signal’s reason', async () => {
    const controller = new AbortController();
    const chunks = (await send('/held', { signal: controller.signal }))[Symbol.asyncIterator]();
    assert.equal(String((await chunks.next()).value), 'data: first\n\n');
    controller.abort(new Error('the turn was cancelled'));
    await assert.rejects(chunks.next(), /the turn was cancelled/);
    release();
  });

  test('a connection dropped mid-body fails the read with a connection reset', async () => {
    const response = await send('/dropped');
    await assert.rejects(() => textOf(response), { code: 'ECONNRESET' });
  });

  test('a URL that is not http or https is refused before anything is sent', async () => {
    await assert.rejects(providerRequest('ftp://127.0.0.1/models', { method: 'POST', headers: {}, body: null, signal: null }), /must be http or https/);
  });

  test('a refused connection rejects with the socket’s error', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await assert.rejects(send('/', { target: `http://127.0.0.1:${port}` }), { code: 'ECONNREFUSED' });
  });

  test('through the Responses adapter, a stream cut short is a retryable connection error', async () => {
    const cutServer = createServer((request, response) => {
      void readBody(request).then(() => {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(`event: response.created\ndata: ${JSON.stringify({ type: 'response.created', response: { id: 'resp_1', model: 'm', status: 'in_progress', output: [] } })}\n\n`);
        setTimeout(() => response.socket?.destroy(), 20);
      });
    });
    await new Promise<void>((resolve) => cutServer.listen(0, '127.0.0.1', resolve));
    try {
      const cutAdapter = createOpenAIResponsesAdapter({ provider: 'openai', baseUrl: `http://127.0.0.1:${(cutServer.address() as AddressInfo).port}/v1`, apiKey: 'sk-test' });
      const error = await caught(() => collect(cutAdapter.stream(modelRequest(), new AbortController().signal)));
      assert.ok(error instanceof ProviderError, String(error));
      assert.equal(error.retryable, true);
    } finally {
      cutServer.closeAllConnections();
      cutServer.close();
    }
  });
});

describe('https', () => {
  let directory: string;
  let tlsServer: ReturnType<typeof createHttpsServer>;
  let tlsBase: string;
  before(async () => {
    directory = mkdtempSync(join(tmpdir(), 'agentd-transport-tls-'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(directory, 'key.pem'), '-out', join(directory, 'cert.pem'), '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    tlsServer = createHttpsServer({ key: readFileSync(join(directory, 'key.pem')), cert: readFileSync(join(directory, 'cert.pem')) }, (request, response) => void route(request, response));
    await new Promise<void>((resolve) => tlsServer.listen(0, '127.0.0.1', resolve));
    tlsBase = `https://127.0.0.1:${(tlsServer.address() as AddressInfo).port}`;
  });
  after(() => {
    tlsServer.closeAllConnections();
    tlsServer.close();
    rmSync(directory, { recursive: true, force: true });
  });

  test('refuses a certificate it cannot verify', async () => {
    await assert.rejects(send('/echo', { target: tlsBase, body: 'x' }), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
  });

  test('speaks TLS when told to trust the server', async () => {
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
    try {
      const response = await send('/echo', { target: tlsBase, body: 'over tls' });
      assert.deepEqual(JSON.parse(await textOf(response)), { got: 'over tls' });
    } finally {
      delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    }
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  for (let attempt = 0; attempt < 200 && !condition(); attempt++) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.ok(condition(), 'the condition never held');
}
