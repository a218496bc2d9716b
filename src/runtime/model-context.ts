import type { Db } from '../store/database.ts';
import { latestContextStart, nextHistoryIndex, readHistoryRange } from '../store/history.ts';
import type { CanonicalItem } from '../agent/providers/types.ts';

/**
 * The model context of a session: the items of the latest `replace` turn (or nothing after a
 * `reset`), then every `append` turn after it. Display items are never part of it.
 */
export async function loadModelContext(db: Db, sessionId: string): Promise<CanonicalItem[]> {
  const end = await nextHistoryIndex(db, sessionId);
  const start = await latestContextStart(db, sessionId);
  const turns = await readHistoryRange(db, sessionId, start ? start.index : 0, end);
  const items: CanonicalItem[] = [];
  for (const turn of turns) {
    if (turn.effect === 'reset') items.length = 0;
    else if (turn.effect === 'replace') items.splice(0, items.length, ...turn.items);
    else items.push(...turn.items);
  }
  return items;
}
