/** agentd as users start it (`node bin/agentd.js serve`), with the turn limits of bench/turns.ts. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { agentdRoot, ensureBuilt, modelsFor } from '../support/children.ts';
import type { HttpClient } from '../support/http-client.ts';
import { SseSubscriber } from '../support/sse-subscriber.ts';
import { TERMINAL_EVENTS, TurnWatcher } from '../support/turn-driver.ts';
import { liveTurnArgs } from '../capacity.ts';
import { TURN_LIMIT_ARGS } from '../turns.ts';
import type { Peer, RunningPeer, TurnRunner } from './peer.ts';
import { freePort, startServerProcess } from './server-process.ts';

const TURN_TIMEOUT_MS = 60_000;

export const agentdPeer: Peer = {
  name: 'agentd',
  async start(fakeModelBaseUrl, scratch, liveTurns) {
    // BENCH_AGENTD_ROOT runs another checkout (say, a clean one while this tree is mid-change).
    const root = agentdRoot();
    ensureBuilt(root);
    const stateDir = join(scratch, 'state');
    const workspace = join(scratch, 'workspace');
    mkdirSync(workspace, { recursive: true });
    const modelsFile = join(scratch, 'models.json');
    writeFileSync(modelsFile, JSON.stringify(modelsFor(fakeModelBaseUrl)));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const server = await startServerProcess({
      command: process.execPath,
      args: [join(root, 'bin', 'agentd.js'), 'serve', '--port', String(port), '--state-dir', stateDir, '--workspace-root', workspace, '--models-file', modelsFile, ...(liveTurns === undefined ? TURN_LIMIT_ARGS : liveTurnArgs(liveTurns))],
      cwd: root,
      env: process.env,
      logFile: join(scratch, 'agentd.log'),
      readyUrl: `${url}/readyz`,
    });
    return running(server, url);
  },
};

function running(server: Awaited<ReturnType<typeof startServerProcess>>, url: string): RunningPeer {
  return {
    ...server,
    url,
    async createSession(client) {
      return (await client.expect(201, 'POST', '/v1/sessions', {})).id as string;
    },
    getSession: (sessionId) => ({ path: `/v1/sessions/${sessionId}` }),
    listSessions: { path: '/v1/sessions?limit=50' },
    async countListed(client) {
      return ((await client.expect(200, 'GET', '/v1/sessions?limit=50')).data as unknown[]).length;
    },
    createSessionLoad: { path: '/v1/sessions', postJson: {} },
    openTurnRunner: (client) => openTurnRunner(url, client),
    async prepareStreamingTurn(client, sessionId, input) {
      return {
        subscribePath: '/v1/events',
        async run() {
          const runner = await openTurnRunner(url, client);
          try {
            await runner.runTurn(sessionId, input);
          } finally {
            await runner.close();
          }
        },
      };
    },
    isOwnFrame: (event) => event === 'replay.reset',
    async prepareLiveTurn(_client, sessionId, input) {
      return {
        subscribePath: `/v1/events?sessionId=${sessionId}`,
        sharedStream: false,
        endsWhenStarted: false,
        start: async (client) => void (await client.expect(202, 'POST', `/v1/sessions/${sessionId}/turns`, { input })),
      };
    },
    isTurnEnd: (event) => event !== undefined && TERMINAL_EVENTS.has(event),
    isTextDelta: (event) => event === 'response.text.delta',
  };
}

/** Turns end on the event stream: one subscription watches for every turn's terminal event. */
async function openTurnRunner(url: string, client: HttpClient): Promise<TurnRunner> {
  const watcher = new TurnWatcher();
  const subscriber = await SseSubscriber.connect(url, watcher.onFrame);
  return {
    async runTurn(sessionId, input) {
      const turn = await client.expect(202, 'POST', `/v1/sessions/${sessionId}/turns`, { input });
      const end = await watcher.wait(turn.id, TURN_TIMEOUT_MS);
      if (end.event !== 'turn.completed') throw new Error(`agentd turn ended with ${end.event}`);
    },
    close: () => subscriber.closeAndWait(),
  };
}
