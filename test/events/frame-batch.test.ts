import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, get, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { FrameBatch } from '../../src/events/frame-batch.ts';
import { EventLog } from '../../src/events/event-log.ts';
import { PassEnd } from '../../src/events/pass-end.ts';

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
  it('joins frames written by separate callbacks of one pass (two immediates), where each callback wrote on its own without it', async () => {
    for (const batched of [true, false]) {
      let writes = -1;
      const text = await withStream((response) => {
        const batch = new FrameBatch(new PassEnd());
        const writesOf = countSocketWrites(response);
        const write = (frame: string) => (batched ? batch.write(response, frame) : response.write(frame));
        // Two immediates booked together run in one pass, always. Two timers of the same delay
        // did not when their bookings fell on either side of a millisecond (a CI-like run saw it).
        setTimeout(() => {
          setImmediate(() => write('data: a\n\n'));
          setImmediate(() => {
            write('data: b\n\n');
            // booked from inside this pass, so it runs in a later one
            setTimeout(() => {
              writes = writesOf();
              response.end();
            }, 25);
          });
        }, 5);
      });
      assert.equal(text, 'data: a\n\ndata: b\n\n');
      assert.equal(writes, batched ? 1 : 2, batched ? 'held: one write for both frames' : 'not held: a write per callback');
    }
  });

  it('lets a lone frame leave in the pass that wrote it, before any timer set with it fires', async () => {
    let writesWhenTimerFired = -1;
    let writesRightAfter = -1;
    await withStream((response) => {
      const batch = new FrameBatch(new PassEnd());
      const writesOf = countSocketWrites(response);
      assert.equal(batch.write(response, 'data: a\n\n'), true);
      writesRightAfter = writesOf();
      setTimeout(() => {
        writesWhenTimerFired = writesOf();
        response.end();
      }, 0);
    });
    assert.equal(writesRightAfter, 0, 'held while the callback runs');
    assert.equal(writesWhenTimerFired, 1);
  });

  it('answers as writing each frame directly would, and lets 16 KB of held frames leave at once rather than at the pass end', async () => {
    const frame = `data: ${'x'.repeat(1_000)}\n\n`;
    const answersOf = { batched: [] as boolean[], direct: [] as boolean[] };
    let writesBeforeThePassEnded = -1;
    let highWaterMark = 0;
    // Enough frames to pass the stream's high-water mark (16 KiB before Node 22, 64 KiB since).
    const frameCount = 80;
    for (const mode of ['batched', 'direct'] as const) {
      const text = await withStream((response) => {
        highWaterMark = response.writableHighWaterMark;
        const batch = new FrameBatch(new PassEnd());
        const writesOf = countSocketWrites(response);
        for (let index = 0; index < frameCount; index += 1) {
          answersOf[mode].push(mode === 'batched' ? batch.write(response, frame) : response.write(frame));
        }
        process.nextTick(() => {
          if (mode === 'batched') writesBeforeThePassEnded = writesOf();
        });
        setImmediate(() => response.end());
      });
      assert.equal(text, frame.repeat(frameCount));
    }
    assert.ok(frame.length * frameCount > highWaterMark, 'the test writes past the high-water mark');
    const firstFalse = { batched: answersOf.batched.indexOf(false), direct: answersOf.direct.indexOf(false) };
    // (the response's headers and chunk framing count in its buffer too, hence the range)
    assert.ok(firstFalse.direct > 0 && firstFalse.direct <= Math.ceil(highWaterMark / frame.length) - 1, 'written directly, the frame that fills the stream\'s buffer is answered false');
    // Held frames are not in the stream's buffer yet, so the batch answers false only once the
    // stream itself needs to drain (it emits 'drain' only then): never sooner than a direct write,
    // and at most the 16 KB it holds later.
    assert.ok(firstFalse.batched >= firstFalse.direct, 'a held frame never makes the stream look saturated sooner');
    assert.ok(firstFalse.batched <= firstFalse.direct + Math.ceil(16_384 / frame.length), 'at most the held 16 KB later');
    assert.ok(answersOf.batched.slice(firstFalse.batched).every((answer) => answer === false), 'once saturated, saturated until it drains');
    assert.equal(writesBeforeThePassEnded, 1, 'the first 16 KB left at the next tick, not at the pass end');
  });

  it('lets held frames leave before the pass ends once they have been held 2 ms (a long pass, as in a saturated fan-out)', async () => {
    let writesInsideTheLongCallback = -1;
    let writesAtPassEnd = -1;
    const text = await withStream((response) => {
      const batch = new FrameBatch(new PassEnd());
      const writesOf = countSocketWrites(response);
      batch.write(response, 'data: first\n\n');
      const startedAt = performance.now();
      while (performance.now() - startedAt < 3) {
        // a callback that keeps the pass busy
      }
      for (let index = 0; index < 32; index += 1) batch.write(response, `data: ${index}\n\n`);
      // the flush inside the callback has written its chunk; node sends it at the next tick
      process.nextTick(() => {
        writesInsideTheLongCallback = writesOf();
      });
      setImmediate(() => {
        writesAtPassEnd = writesOf();
        response.end();
      });
    });
    assert.equal(writesInsideTheLongCallback, 1, 'the held frames left without waiting for the pass to end');
    assert.equal(writesAtPassEnd, 2, 'what was held after that left at the pass end');
    assert.ok(text.startsWith('data: first\n\ndata: 0\n\n') && text.endsWith('data: 31\n\n'));
  });

  it('writes the frames of a fan-out the delivery slice put off in the pass end that resumed it, not a pass later', async () => {
    const SUBSCRIBERS = 40;
    let framesOutAtPassEnd = -1;
    await withStream((response) => {
      let framesOut = 0;
      const write = response.write.bind(response);
      response.write = ((chunk: string) => {
        framesOut += chunk.split('\n\n').length - 1;
        return write(chunk);
      }) as typeof response.write;
      // the log's own frame batch, over the pass end its delivery slice uses
      const log = new EventLog({ replayLimit: 100, firstId: 1 });
      // Each delivery takes 0.5 ms, so the 10 ms slice is spent after 32 of them (the clock is read
      // every 32) and the last 8 subscribers get the event at the pass end.
      const slowSink = {
        write(frame: string) {
          const startedAt = performance.now();
          while (performance.now() - startedAt < 0.5) {
            // a slow subscriber's write
          }
          return log.frameBatch.write(response, frame);
        },
        onDrain() {},
      };
      for (let index = 0; index < SUBSCRIBERS; index += 1) log.subscribe(null, slowSink);
      setTimeout(() => {
        log.append('turn.started', { data: {} });
        assert.equal(log.pendingFanOut, 1, 'the slice was spent: the fan-out was put off');
        setImmediate(() => {
          framesOutAtPassEnd = framesOut;
          response.end();
        });
      }, 1);
    });
    assert.equal(framesOutAtPassEnd, SUBSCRIBERS);
  });

  it('writes a stream\'s held frames when it is released, so a stream ended right after its last event still carries it', async () => {
    const batch = new FrameBatch(new PassEnd());
    const text = await withStream((response) => {
      batch.write(response, 'data: the last event\n\n');
      batch.release(response);
      response.end();
    });
    assert.equal(text, 'data: the last event\n\n');
  });

  it('drops the held frames of a stream ended or destroyed meanwhile, without an error, and goes on batching', async () => {
    const batch = new FrameBatch(new PassEnd());
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      await withStream((response) => {
        batch.write(response, 'data: lost\n\n');
        response.destroy();
      }).catch(() => 'the client saw the stream break');
      const ended = await withStream((response) => {
        batch.write(response, 'data: after the end\n\n');
        response.end();
      });
      assert.equal(ended, '');
      const text = await withStream((response) => {
        batch.write(response, 'data: 1\n\n');
        setTimeout(() => {
          batch.write(response, 'data: 2\n\n');
          setImmediate(() => response.end());
        }, 5);
      });
      assert.equal(text, 'data: 1\n\ndata: 2\n\n');
      await new Promise((resolve) => setTimeout(resolve, 10));
      assert.deepEqual(uncaught, []);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });
});
