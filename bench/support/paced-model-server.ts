/**
 * A paced model for the capacity benchmark, run as its own process: it answers POST /v1/responses,
 * /v1/messages and /v1/chat/completions in each dialect's real wire format (frames from
 * test/support/fake-provider-wire.ts) with a reply of `deltas` words, streamed at `rate` text
 * deltas a second.
 *
 *   node --import tsx bench/support/paced-model-server.ts --deltas 50 --rate 10
 *
 * Every word of a reply is a clock: `t` and sixteen digits, the wall-clock time in microseconds
 * written into the frame just before the frame is written to the socket. A subscriber that reads
 * the word back subtracts it from its own clock: the delivery latency from the model's write to
 * the subscriber's read, across every process in between. All streams share one timer per tick
 * (a stream's frames are sent when due), so the fake's own cost stays flat with the stream count.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { wireByDialect, type WireDialect } from '../../test/support/fake-provider-wire.ts';
import { clockWord } from './clock-words.ts';

const { values } = parseArgs({ options: { deltas: { type: 'string', default: '50' }, rate: { type: 'string', default: '10' } } });
const DELTAS = Number(values.deltas);
const RATE = Number(values.rate);
const PLACEHOLDER = 't0000000000000000';
const TICK_MS = 5;

const DIALECT_BY_PATH: Record<string, WireDialect> = {
  '/v1/responses': 'openai-responses',
  '/v1/messages': 'anthropic-messages',
  '/v1/chat/completions': 'openai-chat',
};

interface Stream {
  response: ServerResponse;
  /** every frame that carries exactly one word is a delta, sent on its own beat */
  batches: string[][];
  startedMs: number;
  sent: number;
}

const streams = new Set<Stream>();
let ticker: NodeJS.Timeout | null = null;
let replies = 0;

/** Groups a reply's frames so that each group ends with one delta; what follows the last delta rides with it. */
function beats(frames: string[]): string[][] {
  const groups: string[][] = [[]];
  for (const frame of frames) {
    groups[groups.length - 1].push(frame);
    if (frame.split(PLACEHOLDER).length === 2) groups.push([]);
  }
  const trailing = groups.pop() ?? [];
  groups[groups.length - 1].push(...trailing);
  return groups;
}

function tick(): void {
  const now = performance.now();
  for (const stream of streams) {
    if (stream.response.destroyed) {
      streams.delete(stream);
      continue;
    }
    const due = Math.min(stream.batches.length, Math.floor(((now - stream.startedMs) * RATE) / 1000) + 1);
    if (due <= stream.sent) continue;
    const word = clockWord();
    stream.response.write(stream.batches.slice(stream.sent, due).flat().join('').replaceAll(PLACEHOLDER, word));
    stream.sent = due;
    if (stream.sent === stream.batches.length) {
      stream.response.end();
      streams.delete(stream);
    }
  }
  if (streams.size === 0 && ticker) {
    clearInterval(ticker);
    ticker = null;
  }
}

function answer(request: IncomingMessage, response: ServerResponse, body: string): void {
  const dialect = DIALECT_BY_PATH[(request.url ?? '').split('?')[0]];
  if (request.method !== 'POST' || !dialect) {
    response.writeHead(404, { 'content-type': 'application/json' });
    return void response.end('{"error":{"message":"no such route"}}');
  }
  const asked = JSON.parse(body) as { model?: string; stream_options?: { include_usage?: boolean } };
  replies += 1;
  const text = Array.from({ length: DELTAS }, () => PLACEHOLDER).join(' ');
  const context = { model: asked.model ?? 'fake-model', id: `paced${replies}`, encryptedReasoning: false, includeUsage: asked.stream_options?.include_usage === true };
  const frames = wireByDialect[dialect].reply({ text }, context);
  response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  streams.add({ response, batches: beats(frames), startedMs: performance.now(), sent: 0 });
  ticker ??= setInterval(tick, TICK_MS);
}

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => answer(request, response, Buffer.concat(chunks).toString('utf8')));
  request.on('error', () => response.destroy());
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  console.log(`paced model listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => process.exit(0));
