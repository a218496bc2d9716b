/**
 * The sandbox protocol's bounds (protocol.ts re-exports them), apart from its schemas: code on the
 * server's start path that needs a bound does not load TypeBox and the schemas with it
 * (test/cli/serve-memory.test.ts).
 */

/** No line in either direction may be longer (UTF-8 bytes, newline excluded); a longer one is a protocol error. */
export const MAX_LINE_BYTES = 4 * 1024 * 1024;
/** The most a single output event carries, so that one chunk never comes near the line bound. */
export const MAX_OUTPUT_CHUNK_CHARS = 64 * 1024;
/** Output a command may stream before the rest is dropped and its result says `truncated`. */
export const MAX_OUTPUT_BYTES = 1024 * 1024;
/** The most a `read` returns; a bigger file comes back cut with `truncated`. */
export const MAX_READ_BYTES = 1024 * 1024;
export const MAX_TIMEOUT_MS = 60 * 60 * 1000;
export const DEFAULT_TIMEOUT_MS = 120 * 1000;
