/**
 * A doorbell between the instances of a cluster: PostgreSQL LISTEN/NOTIFY, used only to say "look
 * now" (docs/CLUSTER.md). A NOTIFY takes a lock global to the database at commit, so a ring is one
 * tiny statement of its own, outside the writes it announces, and rings coalesce while one is in
 * flight. Nothing relies on a ring arriving: the listener's connection is re-established every
 * second after a loss, and whoever listens also polls.
 */
import type pg from 'pg';
import type { PostgresPool } from 'kysely';

const CHANNEL = 'agentd_events';
const RECONNECT_MS = 1_000;

export interface Doorbell {
  /** One NOTIFY with this payload (a few characters). */
  ring(payload: string): Promise<void>;
  /** Starts listening; `ring` gets the payload of each ring, `reconnected` is told after a lost connection came back. */
  listen(ring: (payload: string) => void, reconnected: () => void): DoorbellListener;
}

export interface DoorbellListener {
  close(): Promise<void>;
}

/**
 * Rings through the store's connections (`pool`, with their deadlines); each listener holds a
 * connection of its own, outside the pool, with the store's `session` settings.
 */
export function postgresDoorbell(Pg: typeof pg, url: string, pool: PostgresPool, session: Partial<pg.ClientConfig>): Doorbell {
  return {
    ring: async (payload) => {
      const client = await pool.connect();
      try {
        await client.query('select pg_notify($1, $2)', [CHANNEL, payload]);
      } finally {
        client.release();
      }
    },
    listen: (ring, reconnected) => new Listener(Pg, url, session, ring, reconnected),
  };
}

class Listener implements DoorbellListener {
  private client: pg.Client | null = null;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;
  private everConnected = false;

  constructor(
    private readonly Pg: typeof pg,
    private readonly url: string,
    private readonly session: Partial<pg.ClientConfig>,
    private readonly ring: (payload: string) => void,
    private readonly reconnected: () => void,
  ) {
    void this.connect();
  }

  private async connect(): Promise<void> {
    this.retry = null;
    if (this.closed) return;
    const client = new this.Pg.Client({ connectionString: this.url, connectionTimeoutMillis: 5_000, ...this.session });
    const lost = (): void => {
      if (this.client !== client) return;
      this.client = null;
      this.scheduleConnect();
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (message) => {
      if (message.channel === CHANNEL) this.ring(message.payload ?? '');
    });
    try {
      await client.connect();
      await client.query(`listen ${CHANNEL}`);
    } catch {
      client.end().catch(() => {});
      this.scheduleConnect();
      return;
    }
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    // rings sent while nobody listened are lost: the owner of this listener looks for itself
    if (this.everConnected) this.reconnected();
    this.everConnected = true;
  }

  private scheduleConnect(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => void this.connect(), RECONNECT_MS);
    this.retry.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }
}

/** Rings the doorbell with `payload` (a few characters): one NOTIFY in flight at a time, later rings folded into the next. */
export class DoorbellRinger {
  private ringing = false;
  private again = false;

  constructor(
    private readonly doorbell: Doorbell,
    private readonly payload: string,
  ) {}

  ring(): void {
    if (this.ringing) {
      this.again = true;
      return;
    }
    this.ringing = true;
    this.doorbell
      .ring(this.payload)
      .catch(() => {})
      .finally(() => {
        this.ringing = false;
        if (!this.again) return;
        this.again = false;
        this.ring();
      });
  }
}
