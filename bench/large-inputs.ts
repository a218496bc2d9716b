/**
 * Turns with very large inputs (CONTRACT.md §16): what every echo of such a turn costs, and
 * whether the server's memory follows what it retains or what clients ask for. Submits turns with
 * 20 MB inputs against the zero-latency fake model, one per session, then reads each back (GET
 * turn, GET result) and lists them (GET /v1/turns), reporting response sizes, times and RSS.
 *
 *   node --import tsx bench/large-inputs.ts   (BENCH_LARGE_TURNS, default 6; BENCH_LARGE_MB,
 *                                              default 20; BENCH_AGENTD_ROOT, another checkout)
 *
 * The default --maximum-request-bytes (32 MiB) admits a 20 MB input as JSON.
 */
import { agentdRoot, modelsFor, sleep, startAgentd, startFakeModel } from './support/children.ts';
import { fixed, printFigure, runIfMain, whole } from './support/report.ts';
import { SETTLE_MS } from './memory.ts';

interface Measured {
  status: number;
  bytes: number;
  ms: number;
  json: any;
}

async function measure(baseUrl: string, method: string, path: string, body?: unknown): Promise<Measured> {
  const startedAt = performance.now();
  const response = await fetch(baseUrl + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  const ms = performance.now() - startedAt;
  return { status: response.status, bytes: bytes.length, ms, json: JSON.parse(bytes.toString('utf8')) };
}

const mb = (bytes: number) => `${fixed(bytes / 1e6, 2)} MB`;

async function waitTerminal(baseUrl: string, turnId: string): Promise<string> {
  for (;;) {
    const { json } = await measure(baseUrl, 'GET', `/v1/turns/${turnId}`);
    if (['completed', 'failed', 'cancelled'].includes(json.status)) return json.status;
    await sleep(20);
  }
}

runIfMain(import.meta.url, async () => {
  const turns = Number(process.env.BENCH_LARGE_TURNS ?? 6);
  const inputMb = Number(process.env.BENCH_LARGE_MB ?? 20);
  const fake = await startFakeModel();
  const agentd = await startAgentd({ models: modelsFor(fake.baseUrl), root: agentdRoot() });
  try {
    await sleep(SETTLE_MS);
    const idle = agentd.rssMb();
    printFigure({ name: 'RSS before', value: `${fixed(idle)} MB`, detail: `${SETTLE_MS} ms after "listening"` });
    const input = `large input\n${'0123456789abcdef'.repeat((inputMb * 1e6) / 16)}`;
    const posts: Measured[] = [];
    const ids: string[] = [];
    for (let index = 0; index < turns; index++) {
      const session = await measure(agentd.url, 'POST', '/v1/sessions', {});
      const posted = await measure(agentd.url, 'POST', `/v1/sessions/${session.json.id}/turns`, { input });
      if (posted.status !== 202) throw new Error(`POST turns answered ${posted.status}: ${JSON.stringify(posted.json).slice(0, 200)}`);
      posts.push(posted);
      ids.push(posted.json.id);
      const status = await waitTerminal(agentd.url, posted.json.id);
      if (status !== 'completed') throw new Error(`turn ${posted.json.id} ended ${status}`);
    }
    printFigure({ name: `POST turns (${whole(turns)} × ${inputMb} MB input), 202 body`, value: mb(Math.max(...posts.map((post) => post.bytes))) });
    const gets = await Promise.all(ids.map((id) => measure(agentd.url, 'GET', `/v1/turns/${id}`)));
    printFigure({ name: 'GET /v1/turns/:id body', value: mb(Math.max(...gets.map((get) => get.bytes))), detail: `inputTruncated ${gets[0].json.inputTruncated}` });
    const results = await Promise.all(ids.map((id) => measure(agentd.url, 'GET', `/v1/turns/${id}/result`)));
    printFigure({ name: 'GET /v1/turns/:id/result body', value: mb(Math.max(...results.map((result) => result.bytes))) });
    const listed = await measure(agentd.url, 'GET', '/v1/turns');
    printFigure({ name: `GET /v1/turns over ${whole(turns)} such turns`, value: `${mb(listed.bytes)} in ${fixed(listed.ms)} ms` });
    printFigure({ name: 'RSS right after the reads', value: `${fixed(agentd.rssMb())} MB` });
    await sleep(SETTLE_MS);
    const after = agentd.rssMb();
    printFigure({ name: 'RSS after', value: `${fixed(after)} MB`, detail: `${SETTLE_MS} ms after the last read; ${fixed(after - idle)} MB above before` });
  } finally {
    await Promise.all([agentd.stop(), fake.stop()]);
  }
});
