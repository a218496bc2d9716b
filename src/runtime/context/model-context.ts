import type { Db } from '../../store/database.ts';
import { latestContextStart, nextHistoryIndex, readHistoryRange } from '../../store/history.ts';
import type { CanonicalItem } from '../../agent/providers/types.ts';
import type { HistoryEntry } from '../../domain/history-entry.ts';
import { arrayMeasure, measureJson, tokensOf, type JsonMeasure } from '../../agent/compaction.ts';

/**
 * The model context of a session: the items of the latest `replace` entry (or nothing after a
 * `reset`), then every `append` entry after it. Display items are never part of it.
 *
 * A context is immutable once made (its items deeply frozen): the context cache hands the same one
 * to every turn of the session until the next entry, so no reader may change what another sees.
 */
export interface ModelContext {
  /** the history index the session's next entry takes */
  readonly nextIndex: number;
  readonly items: readonly CanonicalItem[];
  /** the sum of the items' JSON measures (see agent/compaction.ts) */
  readonly itemsMeasure: JsonMeasure;
}

/** What an entry brings to the context. */
export type ContextEntry = Pick<HistoryEntry, 'effect' | 'items'>;

/** The session's context as stored: what a cache miss reads. */
export async function loadModelContext(db: Db, sessionId: string): Promise<ModelContext> {
  const end = await nextHistoryIndex(db, sessionId);
  // a session without history (a new one) has nothing more to read
  if (end === 0) return { nextIndex: 0, items: Object.freeze([]), itemsMeasure: { chars: 0, images: 0, imageChars: 0 } };
  const start = await latestContextStart(db, sessionId);
  const entries = await readHistoryRange(db, sessionId, start ? start.index : 0, end);
  const items: CanonicalItem[] = [];
  for (const entry of entries) {
    if (entry.effect === 'reset') items.length = 0;
    else if (entry.effect === 'replace') items.splice(0, items.length, ...entry.items);
    else items.push(...entry.items);
  }
  // freshly parsed: nobody else holds these objects
  return { nextIndex: end, items: deepFreeze(items), itemsMeasure: sumOfMeasures(items) };
}

/**
 * The context after `entry` was stored at `index` (the context's own next index). The entry's
 * items are copied through JSON, as storing and reading them back would: the context equals what
 * a cold load gives, and shares no object with the turn that made the entry.
 */
export function contextAfter(context: ModelContext, index: number, entry: ContextEntry): ModelContext {
  const added = deepFreeze(JSON.parse(JSON.stringify(entry.items)) as CanonicalItem[]);
  const nextIndex = index + 1;
  if (entry.effect === 'reset') return { nextIndex, items: Object.freeze([]), itemsMeasure: sumOfMeasures([]) };
  if (entry.effect === 'replace') return { nextIndex, items: added, itemsMeasure: sumOfMeasures(added) };
  const measure = sumOfMeasures(added);
  return {
    nextIndex,
    items: Object.freeze([...context.items, ...added]),
    itemsMeasure: {
      chars: context.itemsMeasure.chars + measure.chars,
      images: context.itemsMeasure.images + measure.images,
      imageChars: context.itemsMeasure.imageChars + measure.imageChars,
    },
  };
}

/** estimateTokens(context.items), from the kept measures. */
export function contextTokens(context: ModelContext): number {
  return tokensOf(arrayMeasure(context.items.length, context.itemsMeasure));
}

/** The characters the context's JSON takes, image data included: its weight in a bounded cache. */
export function contextSize(context: ModelContext): number {
  const measure = arrayMeasure(context.items.length, context.itemsMeasure);
  return measure.chars + measure.imageChars;
}

function sumOfMeasures(items: readonly CanonicalItem[]): JsonMeasure {
  const sum: JsonMeasure = { chars: 0, images: 0, imageChars: 0 };
  for (const item of items) {
    const measure = measureJson(item);
    sum.chars += measure.chars;
    sum.images += measure.images;
    sum.imageChars += measure.imageChars;
  }
  return sum;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const field of Object.values(value)) deepFreeze(field);
  }
  return value;
}
