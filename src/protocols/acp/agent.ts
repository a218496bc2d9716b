import { agent, PROTOCOL_VERSION, RequestError, type AgentApp, type AgentContext, type InitializeResponse, type StopReason } from '@agentclientprotocol/sdk';
import { TERMINAL_TURN_EVENTS, type AgentdClient, type Model, type Session, type TurnResult } from '../../client/index.ts';
import { acpErrorOf } from './errors.ts';
import { replayOf } from './history-replay.ts';
import { turnBodyOf } from './prompt-input.ts';
import { SessionBridge, type Complain } from './session-bridge.ts';
import { configOptionsOf, modesOf, PLAN_MODE, DEFAULT_MODE } from './session-state.ts';

export interface AcpAgentOptions {
  /** agentd, through its SDK: the one way this agent reaches it, embedded or remote */
  client: AgentdClient;
  version: string;
  complain: Complain;
}

/** How many history pages (of 100 turns) `session/load` replays at most: the newest ones. */
const REPLAYED_PAGES = 20;

/**
 * agentd as an Agent Client Protocol v1 agent (CONTRACT.md §22). One app per ACP connection: it
 * keeps the sessions that connection opened (new, load, resume) and follows each one's events
 * through agentd's SDK, so the same code serves stdio (embedded or --url) and /acp.
 */
export function acpAgent(options: AcpAgentOptions): AgentApp {
  const { client, complain } = options;
  const bridges = new Map<string, SessionBridge>();
  let models: Promise<Model[]> | null = null;
  const catalog = () => (models ??= client.listModels().then((page) => page.data).catch((error: unknown) => ((models = null), Promise.reject(error))));

  const follow = async (editor: AgentContext, sessionId: string, storedTurns: ReadonlySet<string> | null = null) => {
    bridges.get(sessionId)?.close();
    const bridge = await SessionBridge.open(client, editor, sessionId, complain, storedTurns ? { storedTurns } : null);
    bridges.set(sessionId, bridge);
    return bridge;
  };
  const followed = (sessionId: string) => {
    const bridge = bridges.get(sessionId);
    if (!bridge) throw RequestError.sessionNotFound(sessionId);
    return bridge;
  };
  const describe = async (session: Session) => ({ modes: modesOf(session), configOptions: configOptionsOf(session, await catalog()) });
  /** agentd's refusals as JSON-RPC errors (errors.ts), naming the session when the request has one. */
  const guarded =
    <Params, Result>(handler: (context: { params: Params; client: AgentContext }) => Promise<Result>) =>
    async (context: { params: Params; client: AgentContext }): Promise<Result> => {
      try {
        return await handler(context);
      } catch (error) {
        throw acpErrorOf(error, (context.params as { sessionId?: string }).sessionId);
      }
    };

  const app = agent({ name: 'agentd' })
    // the sessions' event streams end with the connection (an editor gone, a DELETE, shutdown)
    .onConnect((connection) => void connection.closed.finally(() => {
      for (const bridge of bridges.values()) bridge.close();
      bridges.clear();
    }))
    .onRequest('initialize', ({ params }): InitializeResponse => ({
      protocolVersion: Math.min(params.protocolVersion, PROTOCOL_VERSION),
      agentCapabilities: {
        loadSession: true,
        promptCapabilities: { image: true, embeddedContext: true },
        sessionCapabilities: { list: {}, resume: {} },
      },
      agentInfo: { name: 'agentd', title: 'agentd', version: options.version },
      authMethods: [],
    }))
    .onRequest(
      'session/new',
      guarded(async ({ params, client: editor }) => {
        const session = await client.createSession({ body: { cwd: params.cwd } });
        await follow(editor, session.id);
        return { sessionId: session.id, ...(await describe(session)) };
      }),
    )
    .onRequest(
      'session/list',
      guarded(async ({ params }) => {
        const page = await client.listSessions({ query: { limit: 100, ...(params.cursor ? { cursor: params.cursor } : {}) } });
        const sessions = page.data.filter((session) => !params.cwd || session.cwd === params.cwd);
        return { sessions: sessions.map((session) => ({ sessionId: session.id, cwd: session.cwd, title: session.title || null, updatedAt: session.updatedAt })), nextCursor: page.nextCursor ?? null };
      }),
    )
    .onRequest(
      'session/load',
      guarded(async ({ params, client: editor }) => {
        const session = await client.getSession({ path: { id: params.sessionId } });
        const turns = await client.listTurns({ query: { sessionId: session.id } });
        const stored = new Set(turns.data.filter((turn) => TERMINAL_TURN_EVENTS.has(`turn.${turn.status}`)).map((turn) => turn.id));
        const bridge = await follow(editor, session.id, stored);
        for (const turn of turns.data) if (!stored.has(turn.id)) bridge.noteActive(turn.id);
        for (const entry of await historyOf(client, session.id)) {
          for (const update of replayOf(entry.turn)) await editor.notify('session/update', { sessionId: session.id, update });
        }
        await bridge.release();
        return describe(session);
      }),
    )
    .onRequest(
      'session/resume',
      guarded(async ({ params, client: editor }) => {
        const session = await client.getSession({ path: { id: params.sessionId } });
        const bridge = await follow(editor, session.id);
        await bridge.release();
        return describe(session);
      }),
    )
    .onRequest(
      'session/prompt',
      guarded(async ({ params }) => {
        const bridge = followed(params.sessionId);
        const cancelsBefore = bridge.cancels;
        const turn = await client.submitTurn(params.sessionId, turnBodyOf(params.prompt));
        bridge.noteActive(turn.id);
        // a session/cancel that came while the turn was being admitted is for this turn too
        if (bridge.cancels !== cancelsBefore) await client.cancelTurn({ path: { id: turn.id } });
        await bridge.waitForEnd(turn.id);
        return { stopReason: stopReasonOf(await client.getTurnResult({ path: { id: turn.id } })) };
      }),
    )
    .onNotification('session/cancel', async ({ params }) => {
      const bridge = bridges.get(params.sessionId);
      if (bridge) bridge.cancels++;
      for (const turnId of bridge?.activeTurns() ?? []) {
        await client.cancelTurn({ path: { id: turnId } }).catch((error: unknown) => complain(`turn ${turnId} could not be cancelled`, error));
      }
    })
    .onRequest(
      'session/set_mode',
      guarded(async ({ params }) => {
        if (params.modeId !== PLAN_MODE && params.modeId !== DEFAULT_MODE) throw RequestError.invalidParams({ modeId: params.modeId }, `unknown mode ${params.modeId}: ${DEFAULT_MODE} or ${PLAN_MODE}`);
        await client.patchSession({ path: { id: params.sessionId }, body: { planMode: params.modeId === PLAN_MODE } });
        return {};
      }),
    )
    .onRequest(
      'session/set_config_option',
      guarded(async ({ params }) => {
        if (params.configId !== 'model' && params.configId !== 'effort') throw RequestError.invalidParams({ configId: params.configId }, `unknown option ${params.configId}: model or effort`);
        if (typeof params.value !== 'string') throw RequestError.invalidParams({ configId: params.configId }, `${params.configId} takes one of its listed values`);
        const body = params.configId === 'model' ? { model: params.value } : { effort: params.value as Session['effort'] & {} };
        const session = await client.patchSession({ path: { id: params.sessionId }, body } as Parameters<AgentdClient['patchSession']>[0]);
        return { configOptions: configOptionsOf(session, await catalog()) };
      }),
    );
  return app;
}

/** The session's stored turns, oldest first (at most REPLAYED_PAGES pages, the newest). */
async function historyOf(client: AgentdClient, sessionId: string) {
  const pages = [];
  let cursor: number | undefined;
  for (let page = 0; page < REPLAYED_PAGES; page++) {
    const history = await client.getHistory({ path: { id: sessionId }, query: { limit: 100, ...(cursor !== undefined ? { cursor } : {}) } });
    pages.unshift(history.data);
    if (history.nextCursor === null) break;
    cursor = history.nextCursor;
  }
  return pages.flat();
}

/**
 * How the turn ended, in ACP's words: cancelled; an answer cut at the output limit is max_tokens,
 * one the provider's filter stopped is refusal, the agent loop's step limit is max_turn_requests;
 * every other answer is end_turn. A failed turn is a JSON-RPC error carrying agentd's message.
 */
function stopReasonOf({ turn, output }: TurnResult): StopReason {
  if (turn.status === 'cancelled') return 'cancelled';
  if (turn.status === 'failed') throw RequestError.internalError({ code: 'turn_failed', turnId: turn.id }, `the turn failed: ${turn.error ?? 'no reason given'}`);
  const reason = output?.completion.status === 'incomplete' ? output.completion.reason : undefined;
  if (reason === 'max_tokens' || reason === 'max_output_tokens') return 'max_tokens';
  if (reason === 'content_filter' || reason === 'refusal') return 'refusal';
  if (reason === 'step_limit') return 'max_turn_requests';
  return 'end_turn';
}
