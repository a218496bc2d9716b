/**
 * The invariants of issue 17 §2, checked through the public API so they hold whatever the store's
 * layout: no turn left active, one turn per accepted clientRequestId, history indices contiguous
 * per session, session usage equal to the sum of its history.
 */

export type Requester = (method: string, path: string, body?: unknown) => Promise<{ status: number; json: any }>;

/** A turn the driver saw accepted (202), to be found exactly once after any crash. */
export interface AcceptedTurn {
  sessionId: string;
  clientRequestId: string;
  input: string;
  turnId: string;
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

async function allSessions(request: Requester): Promise<any[]> {
  const sessions: any[] = [];
  let cursor: string | null = null;
  do {
    const page = await request('GET', `/v1/sessions?archive=all&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    if (page.status !== 200) throw new Error(`listing sessions: ${page.status}`);
    sessions.push(...page.json.data);
    cursor = page.json.nextCursor;
  } while (cursor);
  return sessions;
}

async function historyOf(request: Requester, sessionId: string): Promise<{ total: number; entries: any[] }> {
  const entries: any[] = [];
  let cursor: number | null = null;
  let total = 0;
  do {
    const page = await request('GET', `/v1/sessions/${sessionId}/history?limit=100${cursor !== null ? `&cursor=${cursor}` : ''}`);
    if (page.status !== 200) throw new Error(`history of ${sessionId}: ${page.status}`);
    total = page.json.total;
    entries.push(...page.json.data);
    cursor = page.json.nextCursor;
  } while (cursor !== null);
  return { total, entries };
}

/**
 * Every violation found, as a sentence. `activeAllowed` is true while the server may still be
 * running turns (then only the durable shape is checked).
 */
export async function invariantViolations(request: Requester, accepted: AcceptedTurn[] = [], options: { activeAllowed?: boolean } = {}): Promise<string[]> {
  const violations: string[] = [];
  for (const session of await allSessions(request)) {
    const turns = await request('GET', `/v1/turns?sessionId=${session.id}`);
    if (turns.status !== 200) {
      violations.push(`turns of ${session.id}: status ${turns.status}`);
      continue;
    }
    const byRequestId = new Map<string, number>();
    for (const turn of turns.json.data) {
      if (!options.activeAllowed && !TERMINAL.has(turn.status)) violations.push(`turn ${turn.id} left ${turn.status}`);
      byRequestId.set(turn.clientRequestId, (byRequestId.get(turn.clientRequestId) ?? 0) + 1);
    }
    for (const [clientRequestId, count] of byRequestId) if (count > 1) violations.push(`clientRequestId ${clientRequestId} has ${count} turns`);

    const { total, entries } = await historyOf(request, session.id);
    const durable = entries.filter((entry) => entry.turn.status === undefined);
    const indices = durable.map((entry) => entry.index).sort((a, b) => a - b);
    if (indices.some((index, position) => index !== position)) violations.push(`history of ${session.id} is not contiguous: ${indices.join(',')}`);
    if (!options.activeAllowed && durable.length !== total) violations.push(`history of ${session.id}: total ${total}, ${durable.length} durable entries`);
    const sum = { input: 0, output: 0, cached: 0 };
    for (const entry of durable) for (const key of ['input', 'output', 'cached'] as const) sum[key] += entry.turn.usage?.[key] ?? 0;
    const current = (await request('GET', `/v1/sessions/${session.id}`)).json;
    if (!options.activeAllowed && current?.usage && (current.usage.input !== sum.input || current.usage.output !== sum.output || current.usage.cached !== sum.cached)) {
      violations.push(`usage of ${session.id} ${JSON.stringify(current.usage)} is not the sum of its history ${JSON.stringify(sum)}`);
    }
  }
  for (const turn of accepted) {
    const replay = await request('POST', `/v1/sessions/${turn.sessionId}/turns`, { input: turn.input, clientRequestId: turn.clientRequestId });
    if (replay.status === 404) continue; // the session was deleted
    if (replay.status !== 202 || replay.json.id !== turn.turnId) violations.push(`clientRequestId ${turn.clientRequestId} no longer maps to turn ${turn.turnId} (${replay.status} ${replay.json?.id ?? replay.json?.error?.code})`);
  }
  return violations;
}
