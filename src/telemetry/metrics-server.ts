import type { Server, ServerResponse } from 'node:http';
import { once } from 'node:events';
import type { Logger } from 'pino';

// node:http as CommonJS: its ES facade would load undici at start-up (serve-memory.test.ts)
const { createServer } = process.getBuiltinModule('node:http');

export interface Scrapable {
  scrape(): Promise<string>;
  readonly contentType: string;
}

export interface MetricsServer {
  /** e.g. http://127.0.0.1:9464/metrics */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * A plain node:http listener for Prometheus, apart from the API: no token (keep it on loopback or
 * a private network), only GET or HEAD /metrics, nothing else answered but 404 and 405.
 */
export async function startMetricsServer(metrics: Scrapable, host: string, port: number, logger: Logger): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path !== '/metrics') return answer(response, 404, 'not found: the metrics are at /metrics\n');
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.setHeader('allow', 'GET, HEAD');
      return answer(response, 405, 'method not allowed\n');
    }
    metrics.scrape().then(
      (text) => {
        response.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' });
        response.end(request.method === 'HEAD' ? undefined : text);
      },
      (error: Error) => {
        logger.error({ err: { message: error.message } }, 'metrics scrape failed');
        answer(response, 500, 'metrics collection failed\n');
      },
    );
  });
  server.keepAliveTimeout = 5_000;
  server.listen({ host, port });
  // once() rejects with the server's 'error' (EADDRINUSE, EACCES) before 'listening'
  await once(server, 'listening').catch((error: Error) => {
    throw new Error(`--metrics-port: cannot listen on ${host}:${port}: ${error.message}`);
  });
  const address = server.address();
  const boundPort = typeof address === 'object' && address ? address.port : port;
  const hostForUrl = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  logger.info({ host, port: boundPort }, 'metrics listening');
  return {
    url: `http://${hostForUrl}:${boundPort}/metrics`,
    port: boundPort,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

function answer(response: ServerResponse, status: number, text: string): void {
  response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  response.end(text);
}
