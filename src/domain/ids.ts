import { randomFillSync } from 'node:crypto';

let lastMillis = 0;
let sequence = 0;

/**
 * Random bytes drawn from a pool refilled 4 KB at a time (as node's randomUUID does): a call into
 * the system's random source per id was 5% of creating a session.
 */
const pool = Buffer.allocUnsafe(4096);
let poolOffset = pool.length;

function takeRandom(length: number): number {
  if (poolOffset + length > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const at = poolOffset;
  poolOffset += length;
  return at;
}

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/** A UUIDv7: time-ordered, so ids sort by creation, with a counter for ids in the same millisecond. */
export function uuidv7(): string {
  let millis = Date.now();
  if (millis <= lastMillis) {
    millis = lastMillis;
    sequence = (sequence + 1) & 0xfff;
    if (sequence === 0) millis = ++lastMillis;
  } else {
    sequence = pool.readUInt16BE(takeRandom(2)) & 0x7ff;
  }
  lastMillis = millis;
  const time = millis.toString(16).padStart(12, '0');
  const r = takeRandom(8);
  return (
    `${time.slice(0, 8)}-${time.slice(8)}-${HEX[0x70 | (sequence >> 8)]}${HEX[sequence & 0xff]}-` +
    `${HEX[0x80 | (pool[r] & 0x3f)]}${HEX[pool[r + 1]]}-${HEX[pool[r + 2]]}${HEX[pool[r + 3]]}${HEX[pool[r + 4]]}${HEX[pool[r + 5]]}${HEX[pool[r + 6]]}${HEX[pool[r + 7]]}`
  );
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
