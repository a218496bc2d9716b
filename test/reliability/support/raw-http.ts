/**
 * An HTTP/1.1 client over a bare socket, so a test can send what no well-behaved client would:
 * no Host, two Hosts, a Content-Length that lies, bytes that are not UTF-8, any method.
 */
import { connect } from 'node:net';

export interface RawRequest {
  method: string;
  /** the request-target exactly as written on the wire */
  target: string;
  headers: Array<[string, string]>;
  body?: Buffer;
  /** write the body and then half-close, for a Content-Length that promises more than is sent */
  endAfterBody?: boolean;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The first response, or `closed` when the server hung up without one. Rejects after `timeoutMs`. */
export function sendRaw(port: number, request: RawRequest, timeoutMs = 10_000): Promise<RawResponse | 'closed'> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (outcome: RawResponse | 'closed' | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const timer = setTimeout(() => finish(new Error(`no answer to ${request.method} ${request.target.slice(0, 200)} within ${timeoutMs} ms`)), timeoutMs);
    socket.on('error', () => finish(parseResponse(Buffer.concat(chunks)) ?? 'closed'));
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      const response = parseResponse(Buffer.concat(chunks));
      // A complete response ends the exchange; an event stream is complete once its head arrived.
      if (response && (response.complete || response.headers['content-type']?.startsWith('text/event-stream'))) finish(response);
    });
    socket.on('close', () => finish(parseResponse(Buffer.concat(chunks)) ?? 'closed'));
    const head = [`${request.method} ${request.target} HTTP/1.1`, ...request.headers.map(([name, value]) => `${name}: ${value}`), 'Connection: close', '', ''].join('\r\n');
    socket.write(Buffer.concat([Buffer.from(head, 'latin1'), request.body ?? Buffer.alloc(0)]));
    if (request.endAfterBody) socket.end();
  });
}

function parseResponse(bytes: Buffer): (RawResponse & { complete: boolean }) | null {
  const headEnd = bytes.indexOf('\r\n\r\n');
  if (headEnd === -1) return null;
  const [statusLine, ...lines] = bytes.subarray(0, headEnd).toString('latin1').split('\r\n');
  const status = Number(statusLine.split(' ')[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = bytes.subarray(headEnd + 4);
  let complete = false;
  if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    complete = body.length >= length;
    body = body.subarray(0, length);
  } else if (headers['transfer-encoding'] === 'chunked') {
    const decoded = dechunk(body);
    complete = decoded !== null;
    body = decoded ?? body;
  } else {
    complete = status === 204 || status === 304;
  }
  return { status, headers, body: body.toString('utf8'), complete };
}

function dechunk(body: Buffer): Buffer | null {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = body.indexOf('\r\n', offset);
    if (lineEnd === -1) return null;
    const size = parseInt(body.subarray(offset, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(size)) return null;
    if (size === 0) return Buffer.concat(parts);
    if (body.length < lineEnd + 2 + size) return null;
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
    offset = lineEnd + 2 + size + 2;
  }
}
