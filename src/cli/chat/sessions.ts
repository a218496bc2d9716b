import type { AgentdClient, Session } from '../../client/index.ts';
import type { ChatOutput } from './render.ts';

/** How many sessions /resume looks through (newest activity first). */
const SESSIONS_SCANNED = 500;
/** How many of a resumed session's turns are shown again. */
const RECENT_TURNS = 5;

/** The newest sessions, page by page, up to SESSIONS_SCANNED. */
export async function recentSessions(client: AgentdClient): Promise<Session[]> {
  const sessions: Session[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listSessions({ query: { limit: 100, ...(cursor ? { cursor } : {}) } });
    sessions.push(...page.data);
    cursor = page.nextCursor ?? undefined;
  } while (cursor && sessions.length < SESSIONS_SCANNED);
  return sessions;
}

/** Sessions whose id starts with `prefix` (case-insensitive); an exact id wins outright. */
export function matchingPrefix(sessions: Session[], prefix: string): Session[] {
  const wanted = prefix.trim().toLowerCase();
  const exact = sessions.filter((session) => session.id.toLowerCase() === wanted);
  return exact.length > 0 ? exact : sessions.filter((session) => session.id.toLowerCase().startsWith(wanted));
}

/** A session named by its id or an unambiguous id prefix; throws a message that says which. */
export async function findSession(client: AgentdClient, idOrPrefix: string): Promise<Session> {
  const matches = matchingPrefix(await recentSessions(client), idOrPrefix);
  if (matches.length === 1) return matches[0];
  if (matches.length === 0) throw new Error(`no session starts with ${idOrPrefix}`);
  throw new Error(`${matches.length} sessions start with ${idOrPrefix}: ${matches.slice(0, 5).map((session) => session.id.slice(0, 13)).join(', ')}…`);
}

/** Shows the session's last few turns: what was asked and what was answered. */
export async function showRecentTurns(client: AgentdClient, session: Session, output: ChatOutput): Promise<void> {
  const history = await client.getHistory({ path: { id: session.id }, query: { limit: RECENT_TURNS } });
  output.notice(`resumed ${session.title || session.id} · ${session.cwd} · ${history.total} turns${history.total > history.data.length ? `, the last ${history.data.length} shown` : ''}`);
  for (const entry of history.data) {
    if (entry.turn.userText.trim() !== '') output.userLine(entry.turn.userText);
    if (entry.turn.assistantText) output.answer(entry.turn.assistantText);
  }
}

/** A session as one row of a list: short id, title, cwd, last activity. */
export function sessionRow(session: Session): string {
  return `${session.id.slice(0, 13)}  ${(session.title || '(untitled)').slice(0, 40)}  ${session.cwd}  ${session.updatedAt.slice(0, 16).replace('T', ' ')}`;
}
