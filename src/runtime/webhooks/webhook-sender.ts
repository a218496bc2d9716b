/**
 * Sends webhook deliveries (one per process, shared by every boundary): a POST over node:http(s)
 * whose connection goes only where the egress rules allow (workspace/webhook-destination.ts judges
 * the address the socket connects to), at most MAX_IN_FLIGHT at once, each bounded by
 * DELIVERY_TIMEOUT_MS. Redirects are not followed: a 3xx is a failed attempt like any non-2xx.
 */
import type { Agent as HttpAgent } from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { checkedLookup, hostOf, reachOf, webhookAddressProblem, WebhookDestinationRefused, type WebhookResolver } from '../../workspace/webhook-destination.ts';
import { SIGNATURE_HEADER, webhookSignature } from './webhook-body.ts';
import { VERSION } from '../../version.ts';

// node:http as CommonJS: its ES facade would load undici at start-up (serve-memory.test.ts)
const http = process.getBuiltinModule('node:http');

/** Deliveries in flight across the process: a slow receiver holds at most these sockets. */
export const MAX_IN_FLIGHT = 8;
/** From the connection to the response's status line; longer is a failed attempt. */
export const DELIVERY_TIMEOUT_MS = 10_000;

export type DeliveryResult = { delivered: true; status: number } | { delivered: false; status: number | null; reason: string };

export interface WebhookSenderOptions {
  secret: string;
  allowLoopback: boolean;
  /** tests: answer names as a rebinding DNS would */
  resolve?: WebhookResolver;
  timeoutMs?: number;
  maxInFlight?: number;
}

export class WebhookSender {
  private inFlight = 0;
  private readonly maxInFlight: number;
  private readonly timeoutMs: number;
  private readonly agents = new Map<string, HttpAgent>();

  constructor(private readonly options: WebhookSenderOptions) {
    this.maxInFlight = options.maxInFlight ?? MAX_IN_FLIGHT;
    this.timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  }

  /** How many more deliveries may start now. */
  get freeSlots(): number {
    return this.maxInFlight - this.inFlight;
  }

  /** POSTs `body` signed; never rejects. Takes a slot for its duration (check freeSlots first). */
  async send(url: string, body: string, signal: AbortSignal): Promise<DeliveryResult> {
    this.inFlight += 1;
    try {
      return await this.post(new URL(url), body, signal);
    } finally {
      this.inFlight -= 1;
    }
  }

  close(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }

  private post(url: URL, body: string, signal: AbortSignal): Promise<DeliveryResult> {
    const reach = reachOf(url, this.options.allowLoopback);
    const host = hostOf(url);
    // an IP literal never reaches a lookup: it is judged here
    const problem = isIP(host) === 0 ? null : webhookAddressProblem(host, reach);
    if (problem) return Promise.resolve({ delivered: false, status: null, reason: `refused destination: ${problem}` });
    const secure = url.protocol === 'https:';
    return new Promise((settle) => {
      let settled = false;
      const done = (result: DeliveryResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        settle(result);
      };
      const request = (secure ? https : http).request(url, {
        method: 'POST',
        agent: this.agentFor(url.protocol, reach.loopbackOnly),
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(body),
          'User-Agent': `agentd/${VERSION}`,
          [SIGNATURE_HEADER]: webhookSignature(this.options.secret, body),
        },
      });
      const fail = (reason: string, status: number | null = null) => {
        done({ delivered: false, status, reason });
        request.destroy();
      };
      const timer = setTimeout(() => fail(`no answer within ${this.timeoutMs / 1000} s`), this.timeoutMs);
      const onAbort = () => fail('the server is stopping');
      signal.addEventListener('abort', onAbort, { once: true });
      request.on('response', (response) => {
        const status = response.statusCode ?? 0;
        // the body is never read: drained so the connection can be kept, cut short if it drags on
        response.resume();
        response.on('error', () => {});
        const drained = setTimeout(() => response.destroy(), this.timeoutMs);
        response.once('close', () => clearTimeout(drained));
        if (status >= 200 && status < 300) done({ delivered: true, status });
        else done({ delivered: false, status, reason: `answered ${status}` });
      });
      request.on('error', (error: NodeJS.ErrnoException) => {
        fail(error instanceof WebhookDestinationRefused ? `refused destination: ${error.message}` : `connection failed (${error.code ?? error.name})`);
      });
      request.end(body);
    });
  }

  /** One keep-alive agent per scheme and reach, each connecting through the checked lookup. */
  private agentFor(protocol: string, loopbackOnly: boolean): HttpAgent {
    const key = `${protocol}${loopbackOnly}`;
    let agent = this.agents.get(key);
    if (!agent) {
      const options = { keepAlive: true, maxSockets: this.maxInFlight, lookup: checkedLookup({ allowLoopback: this.options.allowLoopback, loopbackOnly }, this.options.resolve) };
      agent = protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
      this.agents.set(key, agent);
    }
    return agent;
  }
}
