import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

export interface CollectedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
}

/** A loopback OTLP/HTTP collector stub: accepts JSON export requests at /v1/traces and keeps every span. */
export async function startCollector() {
  const spans: CollectedSpan[] = [];
  const bodies: string[] = [];
  const headers: Record<string, string | string[] | undefined>[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (request.url !== '/v1/traces' || !String(request.headers['content-type']).startsWith('application/json')) {
        response.writeHead(415).end();
        return;
      }
      bodies.push(body);
      headers.push(request.headers);
      for (const resourceSpans of JSON.parse(body).resourceSpans ?? []) {
        const resource = flatten(resourceSpans.resource?.attributes);
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            spans.push({ name: span.name, traceId: span.traceId, spanId: span.spanId, parentSpanId: span.parentSpanId ?? '', attributes: flatten(span.attributes), resource });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    bodies,
    headers,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function flatten(attributes: { key: string; value: Record<string, unknown> }[] | undefined): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const { key, value } of attributes ?? []) {
    const [kind, inner] = Object.entries(value)[0] ?? [];
    result[key] = kind === 'intValue' ? Number(inner) : kind === 'arrayValue' ? (inner as { values?: Record<string, unknown>[] }).values?.map((item) => Object.values(item)[0]) : inner;
  }
  return result;
}
