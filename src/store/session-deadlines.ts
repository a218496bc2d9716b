/**
 * A cluster's PostgreSQL sessions end what a partition leaves hanging within a turn's lease
 * (docs/CLUSTER.md "Partitions"). Cut off from the database with no reset (packets dropped, a
 * frozen link), a connection neither fails nor answers: without deadlines the lease renewal waits
 * forever, and a transaction cut off mid-way keeps its locks on the server for as long as the
 * partition lasts. So, on both ends of every connection of the cluster's store:
 * - the server ends a statement, a lock wait and a transaction left idle within the lease, and
 *   probes an idle peer often enough to notice it is gone within the lease (TCP keepalives, and
 *   tcp_user_timeout for data left unacknowledged);
 * - the client gives up on a query that has not answered within two leases and drops its
 *   connection (a frozen link acknowledges nothing, so the server's limits cannot reach us).
 */
import type pg from 'pg';
import type { PostgresPool, PostgresPoolClient } from 'kysely';

class QueryDeadlineExceeded extends Error {
  constructor(readonly deadlineMs: number) {
    super(`the database did not answer within ${deadlineMs} ms; its connection was dropped`);
    this.name = 'QueryDeadlineExceeded';
  }
}

/** The session settings and socket options of every connection of a cluster whose turn lease is `leaseMs`. */
export function clusterSessionConfig(leaseMs: number): Pick<pg.ClientConfig, 'statement_timeout' | 'lock_timeout' | 'idle_in_transaction_session_timeout' | 'keepAlive' | 'keepAliveInitialDelayMillis' | 'options'> {
  const seconds = (fraction: number) => Math.max(1, Math.floor((leaseMs * fraction) / 1000));
  return {
    statement_timeout: leaseMs,
    lock_timeout: leaseMs,
    // a transaction is a few statements written back to back: idle for half a lease, its client is gone
    idle_in_transaction_session_timeout: Math.max(250, Math.floor(leaseMs / 2)),
    keepAlive: true,
    keepAliveInitialDelayMillis: seconds(1 / 3) * 1000,
    // the server's side: an idle peer probed after a third of a lease, every sixth, given up after three
    options: `-c tcp_keepalives_idle=${seconds(1 / 3)} -c tcp_keepalives_interval=${seconds(1 / 6)} -c tcp_keepalives_count=3 -c tcp_user_timeout=${leaseMs}`,
  };
}

/** How long the client waits for any query of a cluster's store: past the server's own limits. */
export function queryDeadlineMs(leaseMs: number): number {
  return 2 * leaseMs;
}

/** A connection that can be dropped at once, without a goodbye the far end may never read. */
export interface DroppableClient extends PostgresPoolClient {
  drop(): void;
}

/** The socket of a pg client, destroyed: its pending query fails, and the pool discards it on release. */
export function dropPgClient(client: pg.Client): void {
  (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
}

/** A pool whose connections' queries each fail with QueryDeadlineExceeded past `deadlineMs`, dropping their connection. */
export function poolWithDeadlines(connect: () => Promise<DroppableClient>, end: () => Promise<void>, deadlineMs: number): PostgresPool {
  return {
    connect: async () => {
      const client = await connect();
      return {
        query: ((text: string, parameters: unknown[]) => withDeadline(client.query(text, parameters) as Promise<unknown>, deadlineMs, () => client.drop())) as PostgresPoolClient['query'],
        release: () => client.release(),
      };
    },
    end,
  };
}

/** `work`, or QueryDeadlineExceeded once `deadlineMs` passed, with `expired` called then. */
export function withDeadline<T>(work: Promise<T>, deadlineMs: number, expired: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      expired();
      reject(new QueryDeadlineExceeded(deadlineMs));
    }, deadlineMs);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
