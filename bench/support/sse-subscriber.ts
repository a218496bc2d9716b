/** A lean SSE subscriber for GET /v1/events: one socket of its own, frames parsed by hand. */
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';

export interface SseFrame {
  /** null for control frames (replay.reset) */
  id: number | null;
  event: string;
  /** the raw `data:` text; JSON.parse it only when needed */
  data: string;
}

export type FrameListener = (frame: SseFrame, receivedAtMs: number) => void;

export class SseSubscriber {
  private buffer = '';
  private closed = false;

  private constructor(
    private readonly request: ClientRequest,
    private readonly response: IncomingMessage,
    private readonly onFrame: FrameListener,
  ) {
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => this.receive(chunk));
    response.on('error', () => {});
  }

  /** Resolves once the 200 and its headers have arrived; anything else rejects. */
  static connect(baseUrl: string, onFrame: FrameListener, lastEventId?: number, sessionId?: string): Promise<SseSubscriber> {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (lastEventId !== undefined) headers['last-event-id'] = String(lastEventId);
    return new Promise((resolve, reject) => {
      const query = sessionId === undefined ? '' : `?sessionId=${sessionId}`;
      const request = httpRequest(`${baseUrl}/v1/events${query}`, { headers, agent: false }, (response) => {
        if (response.statusCode !== 200) {
          response.resume();
          return reject(new Error(`GET /v1/events: HTTP ${response.statusCode}`));
        }
        resolve(new SseSubscriber(request, response, onFrame));
      });
      request.on('error', reject);
      request.end();
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.request.destroy();
  }

  /** Resolves when the socket has gone, so the server has seen the disconnect too. */
  closeAndWait(): Promise<void> {
    const socket = this.request.socket;
    if (!socket || socket.destroyed) {
      this.close();
      return Promise.resolve();
    }
    const gone = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    this.close();
    return gone;
  }

  private receive(chunk: string): void {
    const receivedAtMs = Date.now();
    this.buffer += chunk;
    let end = this.buffer.indexOf('\n\n');
    if (end === -1) return;
    let start = 0;
    while (end !== -1) {
      const frame = parseFrame(this.buffer.slice(start, end));
      if (frame) this.onFrame(frame, receivedAtMs);
      start = end + 2;
      end = this.buffer.indexOf('\n\n', start);
    }
    this.buffer = this.buffer.slice(start);
  }
}

function parseFrame(text: string): SseFrame | null {
  let id: number | null = null;
  let event = 'message';
  let data = '';
  for (const line of text.split('\n')) {
    if (line.startsWith('id: ')) id = Number(line.slice(4));
    else if (line.startsWith('event: ')) event = line.slice(7);
    else if (line.startsWith('data: ')) data = line.slice(6);
  }
  return data === '' && id === null ? null : { id, event, data };
}
