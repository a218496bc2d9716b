/**
 * Whether a failure means the database cannot be reached or cannot take writes right now (the
 * request may succeed later), as opposed to a fault in what was asked. The HTTP layer answers these
 * with 503 store_unavailable instead of 500.
 */

/** Socket errors of a PostgreSQL connection that never opened or broke. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * SQLSTATEs: class 08 (connection exception), 53 (insufficient resources: disk full, out of
 * memory, too many connections), 57P01-57P03 (shut down, or starting and not accepting yet).
 */
const POSTGRES_STATE = /^(08...|53...|57P0[123])$/;

/** node-postgres says these without a code when the server goes away or a connect times out. */
const POSTGRES_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|connection error|Client was closed/i;

/** better-sqlite3 codes of a full disk, a read-only or vanished file, I/O errors and locks held too long. */
const SQLITE_CODE = /^SQLITE_(FULL|READONLY|IOERR|CANTOPEN|BUSY|LOCKED|NOTADB|PROTOCOL)/;

export function isStoreUnavailable(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || POSTGRES_STATE.test(code) || SQLITE_CODE.test(code))) return true;
  if (error instanceof AggregateError) return error.errors.some(isStoreUnavailable);
  return typeof message === 'string' && POSTGRES_MESSAGES.test(message);
}

/** node-postgres's pool says this when no client of a full pool came free in time: no connection was tried. */
const POOL_WAIT_EXPIRED = 'timeout exceeded when trying to connect';

/**
 * Opens a connection, and asks once more when the first try failed for a passing reason: nothing
 * was sent on it, so trying again cannot do anything twice. The case it is for: a container
 * network that drops a name lookup while it reconfigures (a neighbour stopping), where glibc asks
 * again only after its 5 s, as long as the whole connect may take; the second lookup is answered.
 * A full pool's wait that ran out is not waited again: the caller hears at once that the database
 * is busy, rather than after twice the wait.
 */
export async function connectOnceMore<T>(connect: () => Promise<T>): Promise<T> {
  try {
    return await connect();
  } catch (error) {
    if (!isStoreUnavailable(error) || (error as Error).message === POOL_WAIT_EXPIRED) throw error;
    return connect();
  }
}
