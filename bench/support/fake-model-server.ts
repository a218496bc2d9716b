/**
 * A zero-latency model for benchmarks, run as its own process: POST /v1/responses answers at once
 * with a text reply in the real Responses wire format (frames from test/support/fake-provider-wire.ts).
 *
 *   node --import tsx bench/support/fake-model-server.ts [--words N] [--frames-per-second F]
 *
 * --words sets the reply length; each word becomes one text delta, hence one SSE event in agentd.
 * --frames-per-second paces the reply (0, the default, sends it in one write). POST /config with
 * `{"words": N, "framesPerSecond": F}` changes both for the replies that follow.
 *
 * It times every response from its request headers to the last byte written, keyed by the
 * `bench-turn-…` marker in the newest user input, and GET /stats hands those times over (and
 * forgets them), so the benchmark can subtract the time spent inside the model from a turn.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { responsesReply } from '../../test/support/fake-provider-wire.ts';

const { values } = parseArgs({ options: { words: { type: 'string', default: '8' }, 'frames-per-second': { type: 'string', default: '0' } } });
const ID_PLACEHOLDER = 'BENCHREPLYID';
const PACE_TICK_MS = 4;

let framesPerSecond = 0;
let template: string[] = [];
let wholeTemplate = '';
configure(Number(values.words), Number(values['frames-per-second']));

function configure(words: number, pace: number): void {
  if (!Number.isSafeInteger(words) || words < 1 || !(pace >= 0)) throw new Error('words must be a positive integer and framesPerSecond >= 0');
  const text = Array.from({ length: words }, (_, index) => `word${index}`).join(' ') + '.';
  template = responsesReply({ text }, { model: 'fake-model', id: ID_PLACEHOLDER, encryptedReasoning: false, includeUsage: false });
  wholeTemplate = template.join('');
  framesPerSecond = pace;
}

let replies = 0;
let pending = new Map<string, number>();

const server = createServer((request, response) => {
  const startedMs = performance.now();
  readBody(request).then(
    (body) => {
      if (request.method === 'GET' && request.url === '/stats') return sendStats(response);
      if (request.method === 'POST' && request.url === '/config') {
        const wanted = JSON.parse(body) as { words: number; framesPerSecond: number };
        configure(wanted.words, wanted.framesPerSecond);
        response.writeHead(204);
        return void response.end();
      }
      if (request.method !== 'POST' || request.url !== '/v1/responses') {
        response.writeHead(404, { 'content-type': 'application/json' });
        return void response.end('{"error":{"message":"no such route"}}');
      }
      const marker = newestMarker(body);
      replies += 1;
      const id = `bench${replies}`;
      response.once('finish', () => {
        if (marker !== null) pending.set(marker, (pending.get(marker) ?? 0) + performance.now() - startedMs);
      });
      response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      if (framesPerSecond > 0) pace(response, template.map((frame) => frame.replaceAll(ID_PLACEHOLDER, id)), framesPerSecond);
      else response.end(wholeTemplate.replaceAll(ID_PLACEHOLDER, id));
    },
    () => response.destroy(),
  );
});

/** Writes the frames that are due by now every few milliseconds, so events arrive at a steady rate. */
function pace(response: ServerResponse, frames: string[], framesPerSecond: number): void {
  const startedMs = performance.now();
  let sent = 0;
  const timer = setInterval(() => {
    if (response.destroyed) return void clearInterval(timer);
    const due = Math.min(frames.length, Math.floor(((performance.now() - startedMs) * framesPerSecond) / 1000) + 1);
    if (due > sent) response.write(frames.slice(sent, due).join(''));
    sent = due;
    if (sent === frames.length) {
      clearInterval(timer);
      response.end();
    }
  }, PACE_TICK_MS);
}

function sendStats(response: ServerResponse): void {
  const taken = Object.fromEntries(pending);
  pending = new Map();
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ replies, responseMs: taken }));
}

function newestMarker(body: string): string | null {
  const at = body.lastIndexOf('bench-turn-');
  return at === -1 ? null : (/^bench-turn-[\w-]+/.exec(body.slice(at, at + 80))?.[0] ?? null);
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => {
  console.log(`fake model listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
