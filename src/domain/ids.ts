import { randomBytes } from 'node:crypto';

let lastMillis = 0;
let sequence = 0;

/** A UUIDv7: time-ordered, so ids sort by creation, with a counter for ids in the same millisecond. */
export function uuidv7(): string {
  let millis = Date.now();
  if (millis <= lastMillis) {
    millis = lastMillis;
    sequence = (sequence + 1) & 0xfff;
    if (sequence === 0) millis = ++lastMillis;
  } else {
    sequence = randomBytes(2).readUInt16BE() & 0x7ff;
  }
  lastMillis = millis;
  const bytes = randomBytes(16);
  bytes.writeUIntBE(millis, 0, 6);
  bytes[6] = 0x70 | (sequence >> 8);
  bytes[7] = sequence & 0xff;
  bytes[8] = 0x80 | (bytes[8] & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids in paths are accepted in any case and stored lower-case. */
export function normalizeUuid(value: string): string | null {
  return UUID.test(value) ? value.toLowerCase() : null;
}

/** Timestamps are UTC ISO-8601 with milliseconds; this fixed width makes text order equal time order. */
export function nowIso(): string {
  return new Date().toISOString();
}
