/** A real loopback HTTP receiver of agentd's webhooks, which checks every signature it is sent. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  at: number;
  body: string;
  json: any;
  signature: string | undefined;
  /** X-Agentd-Signature is the HMAC-SHA256 of the exact body with the secret */
  signatureValid: boolean;
  contentType: string | undefined;
  /** what the receiver answered */
  answer: number | 'hold';
}

/** What the receiver answers to the n-th request (1-based): a status, or 'hold' to never answer. */
export type Answer = (n: number, webhook: ReceivedWebhook) => number | 'hold';

export interface WebhookReceiver {
  url: string;
  port: number;
  received: ReceivedWebhook[];
  /** connections open now (a held request keeps its own) */
  readonly openConnections: number;
  /** the most connections open at once */
  readonly peakConnections: number;
  answer: Answer;
  /** resolves once `count` webhooks passing `filter` arrived */
  waitFor(count: number, filter?: (webhook: ReceivedWebhook) => boolean, timeoutMs?: number): Promise<ReceivedWebhook[]>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(secret: string, options: { port?: number; answer?: Answer } = {}): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const held: ServerResponse[] = [];
  let open = 0;
  let peak = 0;
  let n = 0;
  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const signature = request.headers['x-agentd-signature'] as string | undefined;
      const expected = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
      const signatureValid = signature !== undefined && signature.length === expected.length && timingSafeEqual(Buffer.from(signature), Buffer.from(expected));
      let json: unknown = null;
      try {
        json = JSON.parse(body);
      } catch {}
      const webhook: ReceivedWebhook = { at: Date.now(), body, json, signature, signatureValid, contentType: request.headers['content-type'], answer: 'hold' };
      received.push(webhook);
      const answer = receiver.answer(++n, webhook);
      webhook.answer = answer;
      if (answer === 'hold') {
        held.push(response);
        return;
      }
      response.writeHead(answer).end();
    });
  });
  server.on('connection', (socket) => {
    open += 1;
    peak = Math.max(peak, open);
    socket.once('close', () => (open -= 1));
  });
  server.listen(options.port ?? 0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const receiver: WebhookReceiver = {
    url: `http://127.0.0.1:${port}/hooks/agentd`,
    port,
    received,
    get openConnections() {
      return open;
    },
    get peakConnections() {
      return peak;
    },
    answer: options.answer ?? (() => 204),
    async waitFor(count, filter = () => true, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const matching = received.filter(filter);
        if (matching.length >= count) return matching;
        if (Date.now() > deadline) throw new Error(`${matching.length} of ${count} webhooks arrived: ${received.map((webhook) => webhook.json?.type).join(', ')}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async close() {
      for (const response of held) response.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, 'close').catch(() => {});
    },
  };
  return receiver;
}
