/** A keep-alive JSON client over node:http for the load generator (loopback only). */
import { Agent, request as httpRequest } from 'node:http';

export interface JsonResponse {
  status: number;
  json: any;
}

export class HttpClient {
  private readonly agent: Agent;

  constructor(
    readonly baseUrl: string,
    maxSockets = 32,
    /** sent with every request, e.g. a tenant's Authorization */
    private readonly extraHeaders: Record<string, string> = {},
  ) {
    if (!/^http:\/\/(127\.0\.0\.1|localhost|\[::1\])[:/]/.test(baseUrl)) throw new Error(`benchmarks talk to loopback only, not ${baseUrl}`);
    this.agent = new Agent({ keepAlive: true, maxSockets });
  }

  request(method: string, path: string, body?: unknown): Promise<JsonResponse> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string> = payload ? { ...this.extraHeaders, 'content-type': 'application/json', 'content-length': String(payload.length) } : { ...this.extraHeaders };
    return new Promise((resolve, reject) => {
      const req = httpRequest(this.baseUrl + path, { method, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined });
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Like request, but anything other than the expected status is an error. */
  async expect(status: number, method: string, path: string, body?: unknown): Promise<any> {
    const response = await this.request(method, path, body);
    if (response.status !== status) throw new Error(`${method} ${path}: HTTP ${response.status} ${JSON.stringify(response.json)}`);
    return response.json;
  }

  close(): void {
    this.agent.destroy();
  }
}
