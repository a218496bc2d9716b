import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * The protocol SDKs serve fetch-style Requests and Responses; Fastify has already checked access,
 * read the body within its limit and routed. These carry one exchange across.
 */

/** The request as an SDK's server takes it; its signal aborts when our response closes (the client went away). */
export function toWebRequest(request: FastifyRequest, reply: FastifyReply, body: Buffer | undefined): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  const controller = new AbortController();
  reply.raw.once('close', () => controller.abort());
  return new Request(`http://agentd${request.url}`, { method: request.method, headers, signal: controller.signal, ...(request.method === 'POST' && body ? { body: new Uint8Array(body) } : {}) });
}

/**
 * A body-less or JSON answer goes out through Fastify. A stream (SSE) is written straight to the
 * socket with its headers flushed at once: an SSE stream may stay silent for a long while, and its
 * client waits for the headers before it sends anything else.
 */
export async function sendWebResponse(response: Response, reply: FastifyReply): Promise<void> {
  const streaming = response.headers.get('content-type')?.startsWith('text/event-stream') && response.body;
  if (!streaming) {
    reply.code(response.status);
    response.headers.forEach((value, name) => void reply.header(name, value));
    return void reply.send(response.body ? Buffer.from(await response.arrayBuffer()) : undefined);
  }
  reply.hijack();
  const headers: Record<string, string | string[] | number> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) headers[name] = value as string;
  response.headers.forEach((value, name) => (headers[name] = value));
  reply.raw.writeHead(response.status, headers);
  reply.raw.flushHeaders();
  const body = Readable.fromWeb(response.body as NodeReadableStream<Uint8Array>);
  body.on('error', () => reply.raw.destroy());
  reply.raw.once('close', () => body.destroy());
  body.pipe(reply.raw);
}

export function headerOf(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The body parsed, or undefined when it is not JSON. */
export function jsonOf(body: Buffer | undefined): unknown {
  if (!body) return undefined;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

export const JSON_RPC_PARSE_ERROR = { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the request body is not JSON' } };
