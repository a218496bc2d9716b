import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, get, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { FrameBatch } from '../../src/http/frame-batch.ts';

/** The socket writes (write or writev calls reaching the handle) made on `response`'s connection. */
function countSocketWrites(response: ServerResponse): () => number {
  const socket = response.socket as Socket & { _writeGeneric: (...args: unknown[]) => unknown };
  const original = socket._writeGeneric;
  let writes = 0;
  socket._writeGeneric = function countedWrite(this: Socket, ...args: unknown[]) {
    writes += 1;
    return original.apply(this, args);
  };
  return () => writes;
}

/**
 * Serves one event stream: `onStream` gets the response (headers already sent) inside the request's
 * I/O callback; the client's received text is the answer once the server ends the stream.
 */
async function withStream(onStream: (response: ServerResponse) => void): Promise<string> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.flushHeaders();
    onStream(response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const response = await new Promise<IncomingMessage>((resolve, reject) => get(`http://127.0.0.1:${port}/`, resolve).on('error', reject));
    response.setEncoding('utf8');
    let text = '';
    for await (const chunk of response) text += chunk;
    return text;
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('FrameBatch: the frames of one event-loop pass leave in one socket write', () => {
  it('joins frames written by separate callbacks of one pass (two timers), where each callback wrote on its own without it', async () => {
    for (const batched of [true, false]) {
      let writes = -1;
      const text = await withStream((response) => {
        const batch = new FrameBatch();
        const writesOf = countSocketWrites(response);
        const write = (frame: string) => {
          if (batched) batch.hold(response);
          response.write(frame);
        };
        setTimeout(() => write('data: a\n\n'), 5);
        setTimeout(() => write('data: b\n\n'), 5);
        setTimeout(() => {
          writes = writesOf();
          response.end();
        }, 30);
      });
      assert.equal(text, 'data: a\n\ndata: b\n\n');
      assert.equal(writes, batched ? 1 : 2, batched ? 'held: one write for both frames' : 'not held: a write per callback');
    }
  });

  it('lets a lone frame leave in the pass that wrote it, before any timer set with it fires', async () => {
    let writesWhenTimerFired = -1;
    await withStream((response) => {
      const batch = new FrameBatch();
      const writesOf = countSocketWrites(response);
      assert.equal(batch.hold(response), true);
      response.write('data: a\n\n');
      assert.equal(batch.hold(response), false, 'already held in this pass');
      setTimeout(() => {
        writesWhenTimerFired = writesOf();
        response.end();
      }, 0);
    });
    assert.equal(writesWhenTimerFired, 1);
  });

  it('lets held frames leave before the pass ends once they have been held 2 ms (a long pass, as in a saturated fan-out)', async () => {
    let writesInsideTheLongCallback = -1;
    let writesAtPassEnd = -1;
    const text = await withStream((response) => {
      const batch = new FrameBatch();
      const writesOf = countSocketWrites(response);
      batch.hold(response);
      response.write('data: first\n\n');
      const startedAt = performance.now();
      while (performance.now() - startedAt < 3) {
        // a callback that keeps the pass busy
      }
      for (let index = 0; index < 32; index += 1) {
        batch.hold(response);
        response.write(`data: ${index}\n\n`);
      }
      writesInsideTheLongCallback = writesOf();
      setImmediate(() => {
        writesAtPassEnd = writesOf();
        response.end();
      });
    });
    assert.equal(writesInsideTheLongCallback, 1, 'the held frames left inside the callback, without waiting for the pass to end');
    assert.equal(writesAtPassEnd, 2, 'what was held after that left at the pass end');
    assert.ok(text.startsWith('data: first\n\ndata: 0\n\n') && text.endsWith('data: 31\n\n'));
  });

  it('flushes a stream destroyed while held without an error, and goes on holding streams in later passes', async () => {
    const batch = new FrameBatch();
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      await withStream((response) => {
        batch.hold(response);
        response.write('data: lost\n\n');
        response.destroy();
      }).catch(() => 'the client saw the stream break');
      const text = await withStream((response) => {
        batch.hold(response);
        response.write('data: 1\n\n');
        setTimeout(() => {
          assert.equal(batch.hold(response), true, 'a new pass holds it anew');
          response.write('data: 2\n\n');
          response.end();
        }, 5);
      });
      assert.equal(text, 'data: 1\n\ndata: 2\n\n');
      assert.deepEqual(uncaught, []);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });
});
