import { isReplayReset, TERMINAL_TURN_EVENTS, type AgentdClient, type HumanRequest, type Turn } from '../../client/index.ts';

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
 * opened before `submit` runs, so nothing the turn does is missed.
 */
export async function followTurn(client: AgentdClient, sessionId: string, submit: () => Promise<Turn | string>, ask: AskHuman, onProgress: (status: string) => void = () => undefined): Promise<TurnOutcome> {
  const events = client.events({ sessionId });
  try {
    await events.opened;
    const submitted = await submit();
    const turnId = typeof submitted === 'string' ? submitted : submitted.id;
    const pending = (await client.listRequests({ query: { turnId } })).data;
    for (const request of pending) if (!(await answered(client, request, ask))) return outcomeOf(client, turnId, request);
    const now = await client.getTurn({ path: { id: turnId } });
    if (TERMINAL_TURN_EVENTS.has(`turn.${now.status}`)) return outcomeOf(client, turnId, null);
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
  const turn = await client.getTurn({ path: { id: turnId } });
  const base = { sessionId: turn.sessionId, turnId, error: turn.error, text: null, changes: [], request: null };
  if (TERMINAL_TURN_EVENTS.has(`turn.${turn.status}`)) {
    const { output } = await client.getTurnResult({ path: { id: turnId } });
    return { ...base, status: turn.status, text: output?.assistantText ?? null, changes: output?.changes ?? [] };
  }
  const request = waitingOn ?? (await client.listRequests({ query: { turnId } })).data[0] ?? null;
  if (!request) return { ...base, status: turn.status };
  return { ...base, status: 'waiting', request: { requestId: request.id, kind: request.kind, prompt: request.prompt, options: request.options } };
}
