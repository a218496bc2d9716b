/**
 * A canonical history item: an OpenAI Responses input/output item (a plain JSON object with a
 * `type`), kept as received. SPEC.md §2 calls a list of them canonical history; every provider
 * adapter converts to and from them losslessly, so a session can continue on another dialect.
 */
export type CanonicalItem = { type: string; [key: string]: unknown };
