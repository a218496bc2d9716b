/**
 * The live subscribers of one event log, indexed by the session they follow, so an event is
 * offered only to those that want it: with a thousand sessions each watched by its own stream, a
 * delta used to visit every subscriber of the boundary to be refused by all but one.
 */
import type { EventRecord } from './event-record.ts';

/** What the registry needs of a subscriber: the session it narrows to, or null for every event. */
interface Registered {
  readonly sessionId: string | null;
}

export class SubscriberRegistry<Entry extends Registered> {
  private readonly everyEvent = new Set<Entry>();
  private readonly bySession = new Map<string, Set<Entry>>();
  private total = 0;

  get size(): number {
    return this.total;
  }

  add(entry: Entry): void {
    const group = this.groupFor(entry.sessionId, true);
    if (group.has(entry)) return;
    group.add(entry);
    this.total += 1;
  }

  delete(entry: Entry): void {
    const group = this.groupFor(entry.sessionId, false);
    if (!group?.delete(entry)) return;
    this.total -= 1;
    if (entry.sessionId !== null && group.size === 0) this.bySession.delete(entry.sessionId);
  }

  /**
   * The subscribers an event may go to, in a stable order: those of every event first, then the
   * event's session's. A null record (a replay.reset the log owes everyone) goes to all. Sets
   * iterate live, so one added meanwhile is visited too, as before (it refuses ids it already has).
   */
  *targetsOf(record: EventRecord | null): Generator<Entry, void, undefined> {
    yield* this.everyEvent;
    if (record === null) {
      for (const group of this.bySession.values()) yield* group;
      return;
    }
    if (record.sessionId === null) return;
    const group = this.bySession.get(record.sessionId);
    if (group) yield* group;
  }

  private groupFor(sessionId: string | null, create: true): Set<Entry>;
  private groupFor(sessionId: string | null, create: false): Set<Entry> | undefined;
  private groupFor(sessionId: string | null, create: boolean): Set<Entry> | undefined {
    if (sessionId === null) return this.everyEvent;
    let group = this.bySession.get(sessionId);
    if (!group && create) this.bySession.set(sessionId, (group = new Set()));
    return group;
  }
}
