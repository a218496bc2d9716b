// Issue 17 §5: slowloris-style clients and thousands of idle connections do not starve real
// requests, and the server's timeouts (src/http/timeouts.ts) close them: headers, whole request,
// idle keep-alive. The live server's timeouts are shortened here so the test takes seconds.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { HTTP_TIMEOUTS } from '../../src/http/timeouts.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const IDLE = 2_000;
const SLOWLORIS = 100;
const SLOW_BODIES = 50;

interface Watched {
  socket: Socket;
  closedAt: number | null;
  received: string;
}

describe('slow and idle clients', () => {
  let server: TestServer;
  const sockets: Watched[] = [];
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    for (const { socket } of sockets) socket.destroy();
    await server.close();
  });

  function open(): Promise<Watched> {
    return new Promise((resolve, reject) => {
      const watched: Watched = { socket: connect(server.server.port, '127.0.0.1'), closedAt: null, received: '' };
      watched.socket.on('data', (chunk) => (watched.received += chunk));
      watched.socket.on('close', () => (watched.closedAt = Date.now()));
      watched.socket.on('error', () => {});
      watched.socket.once('connect', () => resolve(watched));
      watched.socket.once('error', reject);
      sockets.push(watched);
    });
  }

  it('applies the documented timeouts', () => {
    const node = server.server.app.server;
    assert.equal(node.headersTimeout, HTTP_TIMEOUTS.headersMs);
    assert.equal(node.requestTimeout, HTTP_TIMEOUTS.requestMs);
    assert.equal(node.keepAliveTimeout, HTTP_TIMEOUTS.keepAliveMs);
  });

  it('serves real requests among thousands of idle and slow connections, then closes those', async () => {
    const node = server.server.app.server;
    node.headersTimeout = 1_500;
    node.requestTimeout = 3_000;
    node.keepAliveTimeout = 1_000;
    const host = `127.0.0.1:${server.server.port}`;

    const idle: Watched[] = [];
    for (let index = 0; index < IDLE; index += 100) idle.push(...(await Promise.all(Array.from({ length: 100 }, open))));
    const slowloris = await Promise.all(Array.from({ length: SLOWLORIS }, open));
    for (const { socket } of slowloris) socket.write(`GET /healthz HTTP/1.1\r\nHost: ${host}\r\n`);
    const slowBodies = await Promise.all(Array.from({ length: SLOW_BODIES }, open));
    for (const { socket } of slowBodies) socket.write(`POST /v1/sessions HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`);
    const keptAlive = await Promise.all(Array.from({ length: 50 }, open));
    for (const { socket } of keptAlive) socket.write(`GET /healthz HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    const dribble = setInterval(() => {
      for (const { socket } of slowloris) if (!socket.destroyed) socket.write('X-Slow: 1\r\n');
      for (const { socket } of slowBodies) if (!socket.destroyed) socket.write(' ');
    }, 200);

    try {
      const started = Date.now();
      const latencies: number[] = [];
      for (let round = 0; round < 40; round++) {
        for (const [method, path, body] of [['GET', '/healthz'], ['POST', '/v1/sessions', {}], ['GET', '/v1/sessions?limit=5']] as Array<[string, string, unknown?]>) {
          const sent = Date.now();
          const answer = await server.request(method, path, body === undefined ? {} : { body });
          latencies.push(Date.now() - sent);
          assert.ok(answer.status === 200 || answer.status === 201, `${method} ${path}: ${answer.status}`);
        }
      }
      latencies.sort((a, b) => a - b);
      const p99 = latencies[Math.floor(latencies.length * 0.99)];
      assert.ok(p99 < 1_000, `p99 ${p99} ms with ${IDLE + SLOWLORIS + SLOW_BODIES} slow connections open`);

      // Headers timeout (+ the 1 s check interval): the idle and the slowloris connections go.
      const deadline = started + 8_000;
      const closed = (group: Watched[]) => group.filter((watched) => watched.closedAt !== null).length;
      while ((closed(idle) < IDLE || closed(slowloris) < SLOWLORIS || closed(slowBodies) < SLOW_BODIES || closed(keptAlive) < keptAlive.length) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(closed(idle), IDLE, 'idle connections closed by the headers timeout');
      assert.equal(closed(slowloris), SLOWLORIS, 'slowloris connections closed by the headers timeout');
      assert.equal(closed(slowBodies), SLOW_BODIES, 'slow bodies closed by the request timeout');
      assert.equal(closed(keptAlive), keptAlive.length, 'idle keep-alive connections closed');
      assert.match(slowloris[0].received, /^HTTP\/1\.1 408 [\s\S]*"code":"request_timeout"/, 'a slow client is told why, in the envelope');
      assert.equal((await server.request('GET', '/readyz')).status, 200);
    } finally {
      clearInterval(dribble);
    }
  });
});
