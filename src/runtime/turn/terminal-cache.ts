import type { TurnRecord } from '../../domain/turn.ts';

/**
 * The newest terminal turn records, bounded (SPEC.md §8: the latest 1,000). A record's text is
 * already bounded (store/turns.ts), so a full cache holds at most about 1,000 × 48 KiB of text
 * (input, userText and answer at 16,384 UTF-16 characters each), whatever the inputs were.
 */
export class TerminalTurnCache {
  private readonly records = new Map<string, TurnRecord>();

  constructor(readonly capacity: number) {}

  add(record: TurnRecord): void {
    this.records.delete(record.id);
    this.records.set(record.id, record);
    if (this.records.size > this.capacity) this.records.delete(this.records.keys().next().value!);
  }

  get(id: string): TurnRecord | undefined {
    const record = this.records.get(id);
    return record ? { ...record } : undefined;
  }

  get size(): number {
    return this.records.size;
  }
}
