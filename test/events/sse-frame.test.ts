import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EventSource } from 'eventsource';
import type { EventRecord } from '../../src/events/event-log.ts';
import { KEEP_ALIVE_FRAME, REPLAY_RESET_FRAME, formatEventFrame } from '../../src/events/sse-frame.ts';

const record: EventRecord = {
  id: 42,
  type: 'response.text.delta',
  turnId: '0190f1a2-0000-7000-8000-000000000001',
  sessionId: 'ses_1',
  at: '2025-01-02T03:04:05.000Z',
  data: { text: 'line one\nline two\r\n\u2028end', truncated: false },
};

describe('formatEventFrame', () => {
  it('writes id, event and the whole envelope as one data line', () => {
    const frame = formatEventFrame(record);
    const lines = frame.split('\n');
    assert.equal(lines[0], 'id: 42');
    assert.equal(lines[1], 'event: response.text.delta');
    assert.ok(lines[2].startsWith('data: '));
    assert.deepEqual(lines.slice(3), ['', '']);
    assert.deepEqual(JSON.parse(lines[2].slice('data: '.length)), record);
    assert.equal(frame.includes('\r'), false);
  });

  it('keeps the envelope fields in order', () => {
    const data = formatEventFrame({ ...record, turnId: null, sessionId: null, data: {} }).split('\n')[2];
    assert.equal(
      data,
      'data: {"id":42,"type":"response.text.delta","turnId":null,"sessionId":null,"at":"2025-01-02T03:04:05.000Z","data":{}}',
    );
  });

  it('refuses event types that could break the frame', () => {
    for (const type of ['bad\nname', 'a b', '', 'x\r']) {
      assert.throws(() => formatEventFrame({ ...record, type }), TypeError);
    }
  });
});

describe('control frames', () => {
  it('replay.reset has no id line and carries only reason and refetch', () => {
    assert.equal(REPLAY_RESET_FRAME, 'event: replay.reset\ndata: {"reason":"event_gap","refetch":true}\n\n');
    assert.equal(/^id:/m.test(REPLAY_RESET_FRAME), false);
  });

  it('keep-alive is a comment', () => {
    assert.equal(KEEP_ALIVE_FRAME, ': keep-alive\n\n');
  });
});

describe('frames read by a real SSE client', () => {
  it('delivers events with their cursor, ignores the keep-alive, and replay.reset moves no cursor', async () => {
    const second = { ...record, id: 43, type: 'turn.completed', data: { error: null } };
    const reconnectHeaders: (string | undefined)[] = [];
    const server: Server = createServer((request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      if (reconnectHeaders.push(request.headers['last-event-id'] as string | undefined) === 1) {
        // The test server (not agentd) asks for a quick reconnect, then ends the stream.
        response.end('retry: 10\n\n' + formatEventFrame(record) + KEEP_ALIVE_FRAME + REPLAY_RESET_FRAME);
      } else {
        response.write(formatEventFrame(second));
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const source = new EventSource(`http://127.0.0.1:${port}/`);
    try {
      const received: { type: string; lastEventId: string; data: unknown }[] = [];
      await new Promise<void>((resolve) => {
        const keep = (event: MessageEvent) => {
          received.push({ type: event.type, lastEventId: event.lastEventId, data: JSON.parse(event.data) });
          if (received.length === 3) resolve();
        };
        for (const type of ['response.text.delta', 'replay.reset', 'turn.completed']) source.addEventListener(type, keep);
      });
      assert.deepEqual(received, [
        { type: 'response.text.delta', lastEventId: '42', data: record },
        { type: 'replay.reset', lastEventId: '', data: { reason: 'event_gap', refetch: true } },
        { type: 'turn.completed', lastEventId: '43', data: second },
      ]);
      assert.deepEqual(reconnectHeaders, [undefined, '42'], 'the client resumes after 42, not after the reset');
    } finally {
      source.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
