/**
 * A loopback model provider for tests and benchmarks. It speaks the three wire dialects by path
 * (POST /v1/responses, /v1/messages, /v1/chat/completions) and answers from a FIFO script:
 *
 *   const fake = await startFakeProvider();
 *   fake.enqueue({ kind: 'reply', text: 'hi', toolCalls: [{ name: 'shell', arguments: '{"cmd":"ls"}' }] });
 *   // point an adapter at fake.baseUrl … then inspect fake.requests
 *   await fake.close();
 *
 * With an empty queue every call gets a short text reply. Nothing is delayed unless a step asks.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fixtureAsSse, fixtureResponsesAsSse } from './fixtures.ts';
import { type ScriptedError, type ScriptedReply, type WireContext, type WireDialect, wireByDialect } from './fake-provider-wire.ts';

export { DEFAULT_REPLY_TEXT, fakeEncryptedReasoning, fakeThinkingSignature } from './fake-provider-wire.ts';

export type FakeStep =
  /** A complete reply generated in the dialect of the path that was called. */
  | ({ kind: 'reply'; chunkDelayMs?: number; id?: string } & ScriptedReply)
  /** A recording replayed byte for byte; `response` picks one response of a multi-response file. */
  | { kind: 'fixture'; path: string; response?: number; chunkDelayMs?: number }
  /** Any SSE body, sent as is. */
  | { kind: 'raw'; body: string | Buffer; status?: number; headers?: Record<string, string> }
  | { kind: 'http-error'; status: number; body?: unknown; headers?: Record<string, string> }
  /** HTTP 200, maybe some text, then the dialect's in-stream error. */
  | ({ kind: 'mid-stream-error'; afterText?: string } & ScriptedError)
  /** HTTP 200, maybe some text, then the socket is destroyed. */
  | { kind: 'drop'; afterText?: string }
  /** HTTP 200 and the opening frames, then silence until the client aborts or the fake closes. */
  | { kind: 'hang'; afterText?: string }
  /** Nothing at all (no status line) for `delayMs`, then a complete reply. */
  | ({ kind: 'slow-first-byte'; delayMs: number } & ScriptedReply)
  /** HTTP 200 and text deltas of `chunk` (no whitespace: one delta each) until the client goes away. */
  | { kind: 'endless'; chunk?: string };

export interface FakeRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** the parsed JSON body (the raw text when it is not JSON) */
  body: any;
  dialect: WireDialect | null;
}

export interface FakeProvider {
  /** `http://127.0.0.1:PORT/v1` */
  readonly baseUrl: string;
  readonly port: number;
  readonly requests: FakeRequest[];
  enqueue(...steps: FakeStep[]): void;
  /**
   * Steps only for requests whose first user message contains `marker`, never from the common
   * queue (the default step once used up): concurrent conversations, such as child agents, each
   * get their own script.
   */
  route(marker: string, ...steps: FakeStep[]): void;
  /**
   * Every request whose first user message contains `marker` is answered with what `responder`
   * makes of its body, before any route or the queue: a conversation answered the same however
   * often a request is repeated (a turn resumed on another instance asks again what was lost).
   */
  respond(marker: string, responder: (body: any) => FakeStep): void;
  /** steps not yet consumed */
  pendingSteps(): number;
  /** the step used when the queue is empty (default: a short text reply) */
  setDefaultStep(step: FakeStep): void;
  waitForRequests(count: number, timeoutMs?: number): Promise<FakeRequest[]>;
  close(): Promise<void>;
}

const DIALECT_PATHS: Record<string, WireDialect> = {
  '/v1/responses': 'openai-responses',
  '/v1/messages': 'anthropic-messages',
  '/v1/chat/completions': 'openai-chat',
};

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };

export async function startFakeProvider(): Promise<FakeProvider> {
  const queue: FakeStep[] = [];
  const routes: { marker: string; steps: FakeStep[] }[] = [];
  const responders: { marker: string; responder: (body: any) => FakeStep }[] = [];
  const requests: FakeRequest[] = [];
  const openStreams = new Set<ServerResponse>();
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  let defaultStep: FakeStep = { kind: 'reply' };
  let replyCounter = 0;

  const server = createServer((request, response) => {
    readBody(request).then(
      (rawBody) => {
        const path = (request.url ?? '/').split('?')[0];
        const dialect = request.method === 'POST' ? (DIALECT_PATHS[path] ?? null) : null;
        const recorded: FakeRequest = { method: request.method ?? 'GET', path, headers: request.headers, body: parseJson(rawBody), dialect };
        requests.push(recorded);
        for (const waiter of waiters.filter((candidate) => requests.length >= candidate.count)) waiter.resolve();
        if (dialect === null) return sendJson(response, 404, { error: { message: `fake provider has no route for ${request.method} ${path}` } });
        const opening = dialect === null ? '' : firstUserText(recorded.body);
        const responder = responders.find((candidate) => opening.includes(candidate.marker));
        const route = responder ? undefined : routes.find((candidate) => opening.includes(candidate.marker));
        const step = responder ? responder.responder(recorded.body) : ((route ? route.steps.shift() : queue.shift()) ?? defaultStep);
        replyCounter += 1;
        try {
          answer(step, dialect, recorded.body, `fake${replyCounter}`, response, openStreams);
        } catch (error) {
          sendJson(response, 500, { error: { message: `fake provider script error: ${(error as Error).message}` } });
        }
      },
      () => response.destroy(),
    );
  });
  // Hung streams keep their sockets open; close() must not wait for them.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    enqueue: (...steps) => void queue.push(...steps),
    route: (marker, ...steps) => void routes.push({ marker, steps }),
    respond: (marker, responder) => void responders.push({ marker, responder }),
    pendingSteps: () => queue.length,
    setDefaultStep: (step) => void (defaultStep = step),
    waitForRequests(count, timeoutMs = 5_000) {
      if (requests.length >= count) return Promise.resolve(requests.slice());
      return new Promise((resolve, reject) => {
        const waiter = { count, resolve: () => finish(() => resolve(requests.slice())) };
        const timer = setTimeout(() => finish(() => reject(new Error(`fake provider saw ${requests.length} of ${count} requests within ${timeoutMs} ms`))), timeoutMs);
        const finish = (settle: () => void) => {
          clearTimeout(timer);
          waiters.splice(waiters.indexOf(waiter), 1);
          settle();
        };
        waiters.push(waiter);
      });
    },
    async close() {
      for (const stream of openStreams) stream.destroy();
      openStreams.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

/** The first user message of a request in any dialect, as JSON text (enough to find a marker in). */
function firstUserText(body: any): string {
  const messages: any[] = Array.isArray(body?.input) ? body.input : Array.isArray(body?.messages) ? body.messages : [];
  const first = messages.find((message) => message?.role === 'user');
  return first ? JSON.stringify(first.content ?? '') : '';
}

function answer(step: FakeStep, dialect: WireDialect, body: any, id: string, response: ServerResponse, openStreams: Set<ServerResponse>): void {
  const wire = wireByDialect[dialect];
  const context: WireContext = {
    model: typeof body?.model === 'string' ? body.model : 'fake-model',
    id: step.kind === 'reply' && step.id ? step.id : id,
    encryptedReasoning: Array.isArray(body?.include) && body.include.includes('reasoning.encrypted_content'),
    includeUsage: body?.stream_options?.include_usage === true,
  };
  switch (step.kind) {
    case 'reply':
      return void streamFrames(response, wire.reply(step, context), step.chunkDelayMs, openStreams);
    case 'fixture': {
      const sse = step.response === undefined ? fixtureAsSse(step.path) : fixtureResponsesAsSse(step.path)[step.response];
      if (!sse) throw new Error(`fixture ${step.path} has no response ${step.response}`);
      if (!step.chunkDelayMs) return sendRaw(response, 200, SSE_HEADERS, sse);
      return void streamFrames(response, sse.toString('utf8').split(/(?<=\n\n)/), step.chunkDelayMs, openStreams);
    }
    case 'raw':
      return sendRaw(response, step.status ?? 200, { ...SSE_HEADERS, ...step.headers }, step.body);
    case 'http-error':
      return sendJson(response, step.status, step.body ?? defaultErrorBody(dialect, step.status), step.headers);
    case 'mid-stream-error':
      return sendRaw(response, 200, SSE_HEADERS, wire.streamError(step.afterText, step, context).join(''));
    case 'drop':
      response.writeHead(200, SSE_HEADERS);
      response.write(wire.partial(step.afterText, context).join(''), () => response.socket?.destroy());
      return;
    case 'hang':
      openStreams.add(response);
      response.on('close', () => openStreams.delete(response));
      response.writeHead(200, SSE_HEADERS);
      response.write(wire.partial(step.afterText, context).join(''));
      return;
    case 'slow-first-byte': {
      openStreams.add(response);
      response.on('close', () => openStreams.delete(response));
      const timer = setTimeout(() => {
        if (!response.destroyed) sendRaw(response, 200, SSE_HEADERS, wire.reply(step, context).join(''));
      }, step.delayMs);
      response.on('close', () => clearTimeout(timer));
      return;
    }
    case 'endless':
      return void streamEndlessly(response, wire.partial(step.chunk ?? 'x'.repeat(16_384), context), openStreams);
  }
}

/** The partial's opening frames, then its last (text delta) frame again and again, with backpressure. */
async function streamEndlessly(response: ServerResponse, partial: string[], openStreams: Set<ServerResponse>): Promise<void> {
  openStreams.add(response);
  response.on('close', () => openStreams.delete(response));
  response.writeHead(200, SSE_HEADERS);
  response.write(partial.slice(0, -1).join(''));
  const delta = partial.at(-1)!;
  const drainedOrClosed = () =>
    new Promise<void>((resolve) => {
      const done = () => {
        response.off('drain', done);
        response.off('close', done);
        resolve();
      };
      response.on('drain', done);
      response.on('close', done);
    });
  while (!response.destroyed) {
    if (!response.write(delta)) await drainedOrClosed();
  }
}

async function streamFrames(response: ServerResponse, frames: string[], delayMs: number | undefined, openStreams: Set<ServerResponse>): Promise<void> {
  if (!delayMs) return sendRaw(response, 200, SSE_HEADERS, frames.join(''));
  openStreams.add(response);
  response.on('close', () => openStreams.delete(response));
  response.writeHead(200, SSE_HEADERS);
  for (const frame of frames) {
    if (response.destroyed) return;
    response.write(frame);
    await new Promise((resolve) => setTimeout(resolve, delayMs));
  }
  response.end();
}

function defaultErrorBody(dialect: WireDialect, status: number): unknown {
  const message = `fake provider error ${status}`;
  if (dialect === 'anthropic-messages') {
    const type = status === 429 ? 'rate_limit_error' : status === 529 ? 'overloaded_error' : status >= 500 ? 'api_error' : 'invalid_request_error';
    return { type: 'error', error: { type, message }, request_id: 'req_fake' };
  }
  const code = status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error';
  return { error: { message, type: code, param: null, code } };
}

function sendRaw(response: ServerResponse, status: number, headers: Record<string, string>, body: string | Buffer): void {
  response.writeHead(status, headers);
  response.end(body);
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  sendRaw(response, status, { 'content-type': 'application/json', ...headers }, text);
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function parseJson(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
