/**
 * The provider SDK's cost per streamed model request, over Node's fetch (undici) and over
 * agentd's transport (src/agent/providers/http-transport.ts), against the zero-latency fake model
 * in its own process. The adapter is the one agentd uses, so what is measured is a model step's
 * request, stream parsing and translation, in this process, alternating between the transports.
 *
 *   node --import tsx bench/provider-transport.ts      (BENCH_REQUESTS per round, BENCH_ROUNDS rounds)
 */
import { createOpenAIResponsesAdapter } from '../src/agent/providers/openai-responses/adapter.ts';
import type { ModelRequest, ProviderAdapter } from '../src/agent/providers/types.ts';
import { startFakeModel } from './support/children.ts';
import { fixed, median, runIfMain } from './support/report.ts';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 3000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

/** A turn's request in the benchmark's sessions: a short conversation and no tools. */
function benchRequest(): ModelRequest {
  const input = Array.from({ length: 10 }, (_, index) => ({ type: 'message', role: index % 2 ? 'assistant' : 'user', content: `word `.repeat(40) + index }));
  return { transportModel: 'fake-model', instructions: 'You are a benchmark.', input, tools: [], effort: null } as unknown as ModelRequest;
}

async function cpuPerRequest(adapter: ProviderAdapter, requests: number): Promise<number> {
  const request = benchRequest();
  const started = process.cpuUsage();
  for (let index = 0; index < requests; index++) {
    // read to the end, as a model step does: leaving early would abort the request
    for await (const event of adapter.stream(request, new AbortController().signal)) void event;
  }
  const used = process.cpuUsage(started);
  return (used.user + used.system) / requests;
}

runIfMain(import.meta.url, async () => {
  const fake = await startFakeModel();
  try {
    const connection = { provider: 'openai', baseUrl: fake.baseUrl, apiKey: 'sk-bench' };
    const transports = {
      'Node fetch (undici)': createOpenAIResponsesAdapter(connection, { fetch: globalThis.fetch }),
      'agentd transport (node:http)': createOpenAIResponsesAdapter(connection),
    };
    for (const adapter of Object.values(transports)) await cpuPerRequest(adapter, 500); // warm-up
    const figures = new Map<string, number[]>(Object.keys(transports).map((name) => [name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, adapter] of Object.entries(transports)) figures.get(name)!.push(await cpuPerRequest(adapter, REQUESTS));
    }
    console.log(`# provider transport: ${REQUESTS} streamed requests × ${ROUNDS} rounds, alternating; CPU of this process per request`);
    for (const [name, values] of figures) console.log(`${name}: median ${fixed(median(values), 0)} µs (${values.map((value) => fixed(value, 0)).join(', ')})`);
  } finally {
    await fake.stop();
  }
});
