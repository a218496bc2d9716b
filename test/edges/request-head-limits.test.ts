/**
 * The request head's limits (src/http/request-limits.ts) at their edges, through the real server
 * and raw bytes on a socket: a request target of exactly 8 KiB and one byte more; a request line
 * and header block of exactly 16 KiB and one byte more, counted as they arrived (the request line's
 * method, spaces and version, each header's name, colon, space and CRLF), in ASCII and in
 * multi-byte header values; the split between target and headers moved either way.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startTestServer, type TestServer } from '../support/server.ts';
import { MAX_HEAD_BYTES, MAX_URL_BYTES } from '../../src/http/request-limits.ts';

/** Sends the bytes and returns the status and error code of the one response. */
function exchange(port: number, bytes: Buffer): Promise<{ status: number; code: string | undefined; message?: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const body = text.slice(text.indexOf('\r\n\r\n') + 4);
      const error = body.startsWith('{') ? JSON.parse(body).error : undefined;
      resolve({ status: Number(text.split(' ')[1]), code: error?.code, ...(error ? { message: error.message } : {}) });
    });
    socket.end(bytes);
  });
}

/**
 * A GET whose request line and header lines (without the blank line that ends them) take exactly
 * `headBytes` bytes, the rest filled by an `X-Filler` header of `unit` (its UTF-8 bytes) and ASCII.
 */
function requestWithHead(port: number, target: string, headBytes: number, unit = 'h'): Buffer {
  const fixed = `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\nX-Filler: \r\n`;
  const room = headBytes - Buffer.byteLength(fixed);
  assert.ok(room >= 0, 'the fixed part fits');
  const units = Math.floor(room / Buffer.byteLength(unit));
  const filler = unit.repeat(units) + 'f'.repeat(room - units * Buffer.byteLength(unit));
  const head = Buffer.from(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\nX-Filler: ${filler}\r\n`);
  assert.equal(head.length, headBytes);
  return Buffer.concat([head, Buffer.from('\r\n')]);
}

/** A target of exactly `bytes` bytes on /healthz. */
const targetOf = (bytes: number) => `/healthz?filler=${'u'.repeat(bytes - '/healthz?filler='.length)}`;

describe('request head limits at their edges', () => {
  let server: TestServer;
  let port: number;
  before(async () => {
    server = await startTestServer();
    port = server.server.port;
  });
  after(() => server.close());

  it('uses 8 KiB for the target and 16 KiB for the head', () => {
    assert.equal(MAX_URL_BYTES, 8192);
    assert.equal(MAX_HEAD_BYTES, 16384);
  });

  it('answers a target of exactly 8,192 bytes and refuses 8,193 with 414', async () => {
    assert.deepEqual(await exchange(port, requestWithHead(port, targetOf(MAX_URL_BYTES), 9000)), { status: 200, code: undefined });
    assert.deepEqual(await exchange(port, requestWithHead(port, targetOf(MAX_URL_BYTES + 1), 9000)), { status: 414, code: 'uri_too_long', message: 'the request URL exceeds 8192 bytes' });
  });

  for (const unit of ['h', 'é', '€', '😀']) {
    it(`answers a head of exactly 16,384 bytes and refuses 16,385 with 431 (header bytes of ${JSON.stringify(unit)})`, async () => {
      assert.deepEqual(await exchange(port, requestWithHead(port, '/healthz', MAX_HEAD_BYTES, unit)), { status: 200, code: undefined });
      assert.deepEqual(await exchange(port, requestWithHead(port, '/healthz', MAX_HEAD_BYTES + 1, unit)), { status: 431, code: 'request_header_fields_too_large', message: 'the request line and headers exceed 16384 bytes' });
    });
  }

  it('counts the target inside the head: a long target leaves less room for headers, byte for byte', async () => {
    for (const targetBytes of [100, 4000, MAX_URL_BYTES]) {
      const target = targetOf(targetBytes);
      assert.equal((await exchange(port, requestWithHead(port, target, MAX_HEAD_BYTES))).status, 200, `target ${targetBytes}, head at the limit`);
      assert.equal((await exchange(port, requestWithHead(port, target, MAX_HEAD_BYTES + 1))).status, 431, `target ${targetBytes}, head one past`);
    }
  });

  it('counts every header line, not only the first or the last', async () => {
    // many short headers: each line's name, ": " and CRLF count
    const lines = Array.from({ length: 400 }, (_, index) => `X-H${String(index).padStart(3, '0')}: v`);
    const head = (extra: number) => `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n${lines.join('\r\n')}\r\nX-Pad: ${'p'.repeat(extra)}\r\n`;
    const base = Buffer.byteLength(head(0));
    const atLimit = head(MAX_HEAD_BYTES - base);
    assert.equal(Buffer.byteLength(atLimit), MAX_HEAD_BYTES);
    assert.equal((await exchange(port, Buffer.from(`${atLimit}\r\n`))).status, 200);
    assert.equal((await exchange(port, Buffer.from(`${head(MAX_HEAD_BYTES - base + 1)}\r\n`))).status, 431);
  });
});
