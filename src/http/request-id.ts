/**
 * A fresh UUIDv7 for X-Request-ID (CONTRACT.md §1, rule 4): the same generator as every stored id,
 * cheap enough for every request (its random bytes come from a pool, domain/ids.ts).
 */
export { uuidv7 as requestId } from '../domain/ids.ts';
