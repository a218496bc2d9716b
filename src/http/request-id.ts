import { randomUUID } from 'node:crypto';

/**
 * A fresh UUIDv7 for X-Request-ID (CONTRACT.md §1, rule 4), cheap enough for every request: the random
 * bits come from randomUUID, which draws on a batched entropy cache, instead of a randomBytes call
 * per id. Its variant bits already match; the version nibble and the 48-bit time are set here.
 * Request ids need no order within a millisecond, so unlike domain/ids.ts there is no counter.
 */
export function requestId(): string {
  const random = randomUUID();
  const millis = Date.now().toString(16).padStart(12, '0');
  // random is xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx: keep what follows the version nibble.
  return `${millis.slice(0, 8)}-${millis.slice(8)}-7${random.slice(15)}`;
}
