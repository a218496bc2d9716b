/**
 * Server-Sent Events frames (CONTRACT.md §6). An event frame carries its id as the SSE cursor and
 * the whole envelope as data; the control frame `replay.reset` carries no id, because it is not an
 * event a client could resume after. JSON.stringify never emits a raw line break, so one `data:`
 * line always holds the whole payload.
 */

import type { EventRecord } from './event-record.ts';

export const KEEP_ALIVE_FRAME = ': keep-alive\n\n';

export const REPLAY_RESET_FRAME = 'event: replay.reset\ndata: {"reason":"event_gap","refetch":true}\n\n';

/** Event names are dotted words; anything else could break the frame's line structure. */
const EVENT_TYPE = /^[A-Za-z0-9_.-]+$/;

export function isValidEventType(type: string): boolean {
  return EVENT_TYPE.test(type);
}

export function formatEventFrame(record: EventRecord): string {
  if (!isValidEventType(record.type)) throw new TypeError(`invalid event type ${JSON.stringify(record.type)}`);
  return `id: ${record.id}\nevent: ${record.type}\ndata: ${JSON.stringify(record)}\n\n`;
}
