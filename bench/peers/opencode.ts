/**
 * opencode (`opencode serve`, the npm package opencode-ai) with a home of its own, no external
 * plugins, no models.dev fetch and no autoupdate, its one provider the benchmark's fake model
 * through the AI SDK's OpenAI provider (which speaks the Responses API, as agentd's model does).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HttpClient } from '../support/http-client.ts';
import { PEER_PACKAGES, peerBinary } from './install.ts';
import type { Peer, RunningPeer } from './peer.ts';
import { freePort, startServerProcess, type ServerProcess } from './server-process.ts';

const MODEL = { providerID: 'bench', modelID: 'fake-model' };

export const opencodePeer: Peer = {
  name: `opencode ${PEER_PACKAGES['opencode-ai']}`,
  async start(fakeModelBaseUrl, scratch) {
    const home = join(scratch, 'home');
    const workspace = join(scratch, 'workspace');
    mkdirSync(home, { recursive: true });
    mkdirSync(workspace, { recursive: true });
    writeFileSync(join(workspace, 'opencode.json'), JSON.stringify(configFor(fakeModelBaseUrl), null, 2));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const server = await startServerProcess({
      command: peerBinary('opencode'),
      args: ['serve', '--port', String(port), '--hostname', '127.0.0.1', '--pure', '--log-level', 'WARN'],
      cwd: workspace,
      env: isolatedEnvironment(home),
      logFile: join(scratch, 'opencode.log'),
      readyUrl: `${url}/session`,
    });
    return running(server, url);
  },
};

function configFor(fakeModelBaseUrl: string) {
  return {
    model: `${MODEL.providerID}/${MODEL.modelID}`,
    autoupdate: false,
    share: 'disabled',
    provider: {
      [MODEL.providerID]: {
        npm: '@ai-sdk/openai',
        name: 'bench',
        options: { baseURL: fakeModelBaseUrl, apiKey: 'bench' },
        models: { [MODEL.modelID]: { name: MODEL.modelID } },
      },
    },
  };
}

/** Everything opencode reads or writes stays in the run's scratch directory; nothing reaches the network. */
function isolatedEnvironment(home: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    OPENCODE_DISABLE_MODELS_FETCH: 'true',
    OPENCODE_DISABLE_AUTOUPDATE: 'true',
    OPENCODE_DISABLE_DEFAULT_PLUGINS: 'true',
    OPENCODE_DISABLE_LSP_DOWNLOAD: 'true',
  };
}

function running(server: ServerProcess, url: string): RunningPeer {
  const runTurn = async (client: HttpClient, sessionId: string, input: string) => {
    // The message route answers when the assistant's reply is complete.
    const reply = await client.expect(200, 'POST', `/session/${sessionId}/message`, { parts: [{ type: 'text', text: input }], model: MODEL });
    if (reply?.info?.error) throw new Error(`opencode turn failed: ${JSON.stringify(reply.info.error).slice(0, 200)}`);
  };
  return {
    ...server,
    url,
    async createSession(client) {
      return (await client.expect(200, 'POST', '/session', {})).id as string;
    },
    getSession: (sessionId) => ({ path: `/session/${sessionId}` }),
    listSessions: { path: '/session?limit=50' },
    async countListed(client) {
      return ((await client.expect(200, 'GET', '/session?limit=50')) as unknown[]).length;
    },
    createSessionLoad: { path: '/session', postJson: {} },
    async openTurnRunner(client) {
      return { runTurn: (sessionId, input) => runTurn(client, sessionId, input), close: async () => {} };
    },
    async prepareStreamingTurn(client, sessionId, input) {
      return { subscribePath: '/event', run: () => runTurn(client, sessionId, input) };
    },
    // server.connected greets each subscriber; server.heartbeat keeps each connection alive.
    isOwnFrame: (_event, data) => data.includes('"type":"server.'),
    // opencode has one event stream for everything; the message route answers when the reply is complete.
    async prepareLiveTurn(_client, sessionId, input) {
      return { subscribePath: '/event', sharedStream: true, endsWhenStarted: true, start: (client) => runTurn(client, sessionId, input) };
    },
    isTurnEnd: () => false,
    // the session's title, made by the same model, quotes words of a reply too
    isTextDelta: (_event, data) => data.includes('"type":"message.part.delta"'),
  };
}
