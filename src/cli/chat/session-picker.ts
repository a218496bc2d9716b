import type { Session } from '../../client/index.ts';
import { sessionRow } from './sessions.ts';
import { inert, paint } from './style.ts';

const VISIBLE = 8;

export interface PickerKey {
  name?: string;
  ctrl?: boolean;
  meta?: boolean;
  shift?: boolean;
  sequence?: string;
}

/**
 * /resume's list: ↑/↓ move, typing filters (by id prefix, title or directory), Enter picks, Esc
 * (or Ctrl-C) leaves. Pure state; the chat feeds it keys and shows its lines.
 */
export class SessionPicker {
  private filter: string;
  private selected = 0;

  constructor(
    private readonly sessions: Session[],
    initialFilter = '',
    private readonly current: string | null = null,
  ) {
    this.filter = initialFilter;
  }

  /** 'pick' with the session, 'cancel', or null when the picker stays open. */
  key(text: string | undefined, key: PickerKey): { picked: Session } | 'cancel' | null {
    const matches = this.matches();
    if (key.name === 'escape' || (key.ctrl && key.name === 'c')) return 'cancel';
    if (key.name === 'return' || key.name === 'enter') return matches[this.selected] ? { picked: matches[this.selected] } : null;
    if (key.name === 'up') this.selected = Math.max(0, this.selected - 1);
    else if (key.name === 'down') this.selected = Math.min(Math.max(0, matches.length - 1), this.selected + 1);
    else if (key.name === 'backspace') this.setFilter(this.filter.slice(0, -1));
    else if (text && !key.ctrl && !key.meta && text >= ' ' && text.length === 1) this.setFilter(this.filter + text);
    return null;
  }

  lines(): string[] {
    const matches = this.matches();
    const first = Math.max(0, Math.min(this.selected - VISIBLE + 1, matches.length - VISIBLE));
    const rows = matches.slice(first, first + VISIBLE).map((session, offset) => {
      const row = `${session.id === this.current ? '*' : ' '} ${inert(sessionRow(session))}`;
      return first + offset === this.selected ? paint('inverse', `› ${row}`) : `  ${row}`;
    });
    const heading = `${paint('bold', 'resume')} ${paint('dim', '(↑↓ move · type to filter · Enter picks · Esc leaves)')} ${inert(this.filter)}▏`;
    const count = paint('dim', `  ${matches.length} of ${this.sessions.length} sessions`);
    return [heading, ...(rows.length > 0 ? rows : [paint('dim', '  no session matches')]), count];
  }

  private setFilter(filter: string): void {
    this.filter = filter;
    this.selected = 0;
  }

  private matches(): Session[] {
    const words = this.filter.toLowerCase().split(/\s+/).filter(Boolean);
    return this.sessions.filter((session) => {
      const haystack = `${session.id} ${session.title} ${session.cwd}`.toLowerCase();
      return words.every((word) => session.id.toLowerCase().startsWith(word) || haystack.includes(word));
    });
  }
}
