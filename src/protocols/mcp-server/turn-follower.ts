import type { SessionStreams } from './session-streams.ts';
import { AgentdError, isReplayReset, TERMINAL_TURN_EVENTS, type AgentdClient, type HumanRequest, type Turn, type TurnResult } from '../../client/index.ts';

export interface TurnOutcome {
  sessionId: string;
  turnId: string;
  /** the turn's status: completed, failed, cancelled; `waiting` while a human request waits; queued or running otherwise */
  status: string;
  /** the final answer (null until the turn completes, or when it has none) */
  text: string | null;
  error: string | null;
  /** the files the turn created, modified or deleted (CONTRACT.md §20) */
  changes: { path: string; kind: string; bytes: number }[];
  /** the human request the turn waits on, with `waiting` */
  request: { requestId: string; kind: string; prompt: string; options: string[] } | null;
}

/** Answers a human request (elicitation); null leaves it waiting for answer_request. */
export type AskHuman = (request: HumanRequest) => Promise<{ decision: string; value?: string } | null>;

/**
 * Follows one turn through agentd's events until it ends, or until a human request of it is
 * left unanswered (`ask` returned null), and says where it stands. The session's event stream is
 * opened before `start` runs, so nothing a turn submitted by `start` does is missed; a turn that
 * was already running (`start` gives its id) is first looked at, for what came before. `start`
 * answering null (the call became an MCP task) leaves the turn unfollowed: null.
 */
export async function followTurn(client: AgentdClient, streams: SessionStreams, sessionId: string, start: () => Promise<Turn | string | null>, ask: AskHuman, onProgress: (status: string) => void = () => undefined): Promise<TurnOutcome | null> {
  const events = await streams.tap(sessionId);
  try {
    const started = await start();
    if (started === null) return null;
    const turnId = typeof started === 'string' ? started : started.id;
    if (typeof started === 'string') {
      const pending = (await client.listRequests({ query: { turnId } })).data;
      for (const request of pending) if (!(await answered(client, request, ask))) return outcomeOf(client, turnId, request);
      const now = await client.getTurn({ path: { id: turnId } });
      if (TERMINAL_TURN_EVENTS.has(`turn.${now.status}`)) return outcomeOf(client, turnId, null);
    }
    for await (const item of events) {
      if (isReplayReset(item)) {
        const turn = await client.getTurn({ path: { id: turnId } });
        if (TERMINAL_TURN_EVENTS.has(`turn.${turn.status}`)) return outcomeOf(client, turnId, null);
        continue;
      }
      if (item.turnId !== turnId) continue;
      if (item.type === 'turn.started') onProgress('running');
      if (item.type === 'request.created' && !(await answered(client, item.data, ask))) return outcomeOf(client, turnId, item.data);
      if (TERMINAL_TURN_EVENTS.has(item.type)) return outcomeOf(client, turnId, null);
    }
    return outcomeOf(client, turnId, null);
  } finally {
    events.close();
  }
}

async function answered(client: AgentdClient, request: HumanRequest, ask: AskHuman): Promise<boolean> {
  const answer = await ask(request);
  if (!answer) return false;
  await client.resolveRequest({ path: { id: request.id }, body: answer });
  return true;
}

/** Where the turn stands now: its answer and receipt when terminal, the request it waits on. */
export async function outcomeOf(client: AgentdClient, turnId: string, waitingOn: HumanRequest | null): Promise<TurnOutcome> {
  const ended = await resultIfTerminal(client, turnId);
  if (ended) {
    const { turn, output } = ended;
    return { sessionId: turn.sessionId, turnId, status: turn.status, error: turn.error, text: output?.assistantText ?? null, changes: output?.changes ?? [], request: null };
  }
  const turn = await client.getTurn({ path: { id: turnId } });
  const base = { sessionId: turn.sessionId, turnId, error: turn.error, text: null, changes: [], request: null };
  const request = waitingOn ?? (await client.listRequests({ query: { turnId } })).data[0] ?? null;
  if (!request) return { ...base, status: turn.status };
  return { ...base, status: 'waiting', request: { requestId: request.id, kind: request.kind, prompt: request.prompt, options: request.options } };
}

async function resultIfTerminal(client: AgentdClient, turnId: string): Promise<TurnResult | null> {
  try {
    return await client.getTurnResult({ path: { id: turnId } });
  } catch (error) {
    if (error instanceof AgentdError && error.code === 'turn_not_terminal') return null;
    throw error;
  }
}
