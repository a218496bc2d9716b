/**
 * The LangGraph JS agent server as `langgraphjs dev` runs it locally (in memory, no license key,
 * no LangSmith), serving bench/peers/langgraph-agent.mjs: one node that asks the fake model.
 */
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep } from '../support/children.ts';
import type { HttpClient } from '../support/http-client.ts';
import { PEER_PACKAGES, peerBinary, peersDirectory } from './install.ts';
import type { Peer, RunningPeer } from './peer.ts';
import { freePort, startServerProcess, type ServerProcess } from './server-process.ts';

const GRAPH_ID = 'agent';
const RUN_POLL_MS = 50;
const RUN_TIMEOUT_MS = 60_000;
/** Subscribers join a run's stream while it waits this long to start. */
const STREAM_START_DELAY_SECONDS = 2;

export const langgraphPeer: Peer = {
  name: `LangGraph dev ${PEER_PACKAGES['@langchain/langgraph-cli']}`,
  async start(fakeModelBaseUrl, scratch, liveTurns) {
    // The project must sit inside the cache so the graph resolves the pinned @langchain packages.
    const project = join(peersDirectory(), 'projects', scratch.replace(/[^\w-]/g, '_').slice(-40));
    mkdirSync(project, { recursive: true });
    copyFileSync(join(dirname(fileURLToPath(import.meta.url)), 'langgraph-agent.mjs'), join(project, 'agent.mjs'));
    writeFileSync(join(project, 'langgraph.json'), JSON.stringify({ node_version: '20', graphs: { [GRAPH_ID]: './agent.mjs:graph' }, env: {} }));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const server = await startServerProcess({
      command: peerBinary('langgraphjs'),
      // a run takes a worker for as long as it streams: as many workers as turns stream at once
      args: ['dev', '--port', String(port), '--host', '127.0.0.1', '--no-browser', '--config', join(project, 'langgraph.json'), ...(liveTurns === undefined ? [] : ['--n-jobs-per-worker', String(liveTurns)])],
      cwd: project,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, BENCH_FAKE_MODEL_URL: fakeModelBaseUrl, LANGSMITH_TRACING: 'false', LANGCHAIN_TRACING_V2: 'false' },
      logFile: join(scratch, 'langgraph.log'),
      readyUrl: `${url}/ok`,
    });
    return running(server, url, project);
  },
};

function running(server: ServerProcess, url: string, project: string): RunningPeer {
  const input = (text: string) => ({ assistant_id: GRAPH_ID, input: { messages: [{ role: 'user', content: text }] } });
  return {
    ...server,
    url,
    async createSession(client) {
      return (await client.expect(200, 'POST', '/threads', {})).thread_id as string;
    },
    getSession: (threadId) => ({ path: `/threads/${threadId}` }),
    listSessions: { path: '/threads/search', postJson: { limit: 50 } },
    async countListed(client) {
      return ((await client.expect(200, 'POST', '/threads/search', { limit: 50 })) as unknown[]).length;
    },
    createSessionLoad: { path: '/threads', postJson: {} },
    async openTurnRunner(client) {
      return {
        async runTurn(threadId, text) {
          const state = await client.expect(200, 'POST', `/threads/${threadId}/runs/wait`, input(text));
          if (!Array.isArray(state?.messages) || state.messages.length < 2) throw new Error(`LangGraph run ended without a reply: ${JSON.stringify(state).slice(0, 200)}`);
        },
        close: async () => {},
      };
    },
    async prepareStreamingTurn(client, threadId, text) {
      const run = await client.expect(200, 'POST', `/threads/${threadId}/runs`, { ...input(text), stream_mode: ['messages-tuple'], after_seconds: STREAM_START_DELAY_SECONDS });
      return {
        subscribePath: `/threads/${threadId}/runs/${run.run_id}/stream`,
        // Not /join: a join takes events from the same queue the stream's subscribers read.
        run: () => waitForRun(client, `/threads/${threadId}/runs/${run.run_id}`),
      };
    },
    isOwnFrame: () => false,
    async prepareLiveTurn(client, threadId, text, liveTurns) {
      // The run waits long enough for every live turn to be made and watched before any starts.
      const afterSeconds = STREAM_START_DELAY_SECONDS + Math.ceil(liveTurns / 50);
      const run = await client.expect(200, 'POST', `/threads/${threadId}/runs`, { ...input(text), stream_mode: ['messages-tuple'], after_seconds: afterSeconds });
      return { subscribePath: `/threads/${threadId}/runs/${run.run_id}/stream`, sharedStream: false, endsWhenStarted: false, start: async () => {} };
    },
    // a run's stream ends with the run
    isTurnEnd: () => false,
    isTextDelta: (event) => event?.startsWith('messages') ?? false,
    async stop() {
      await server.stop();
      rmSync(project, { recursive: true, force: true });
    },
  };
}

async function waitForRun(client: HttpClient, runPath: string): Promise<void> {
  for (const deadline = Date.now() + RUN_TIMEOUT_MS; Date.now() < deadline; await sleep(RUN_POLL_MS)) {
    const { status } = await client.expect(200, 'GET', runPath);
    if (status === 'success') return;
    if (status !== 'pending' && status !== 'running') throw new Error(`LangGraph run ended with status ${status}`);
  }
  throw new Error(`LangGraph run did not end within ${RUN_TIMEOUT_MS} ms`);
}
