/**
 * One loop per instance for a cluster's background work (docs/CLUSTER.md, "One supervisor per
 * instance"): the renewal of turn leases and their sweep, the looks for cancels, answers, steers
 * and queued turns asked through other instances, the event stream's follow, the multi-tenant
 * tenants' and queue's leases. Each is a duty registered here with its cadence; one timer, set for
 * the earliest duty due, runs them, whatever the number of boundaries open.
 *
 * A duty that waits on another instance is woken by that instance's ring on the database's
 * doorbell (store/doorbell.ts: LISTEN/NOTIFY), so a cancel or an answer is acted on at once; its
 * cadence is then only the fallback for a ring lost while the listener reconnected. The supervisor
 * holds one listener per database (PostgreSQL delivers a NOTIFY only within its database), shared
 * by every boundary on it.
 *
 * Duties run side by side: one waiting on a query that hangs holds up no other, so the lease
 * watchdog, a duty that queries nothing, fires on time during a partition.
 */
import type { Logger } from 'pino';
import { DoorbellRinger, type Doorbell, type DoorbellListener } from '../store/doorbell.ts';

/** What a ring says to the other instances: look now for new events, a cancel, an answer, a steer, a queued turn, released leases. */
type RingKind = 'events' | 'cancel' | 'answer' | 'steer' | 'queued' | 'released';

const RING_KINDS: ReadonlySet<string> = new Set<RingKind>(['events', 'cancel', 'answer', 'steer', 'queued', 'released']);

/**
 * How often a duty that waits on other instances looks without a ring (CONTRACT.md §18: a cancel
 * acted on within 2 s even when its ring was lost).
 */
const CLUSTER_POLL_MS = 500;

export interface DutyOptions {
  /** for the logs and diagnostics */
  name: string;
  /** its cadence: how long after a run it is due again; the supervisor's poll when not given */
  everyMs?: number;
  /** the work; while one run is going the duty does not start again, but runs once more after it if it fell due meanwhile */
  run(): Promise<void> | void;
}

export interface Duty {
  /** Runs the duty as soon as the loop can (coalesced with other wakes). */
  wake(): void;
  /** Its next run is due `ms` from now, earlier or later than its cadence would have it. */
  dueIn(ms: number): void;
  stop(): void;
}

/** The duties of one boundary, and its database's doorbell, as the instance's supervisor serves them. */
export interface ClusterDuties {
  readonly instanceId: string;
  /** A duty of this boundary; `wokenBy`: rings of another instance that make it due at once (and a listener that came back). */
  add(options: DutyOptions & { wokenBy?: readonly RingKind[] }): Duty;
  /** Calls `heard` on each ring of `kind` from another instance, and when the listener came back (rings may have been lost). */
  on(kind: RingKind, heard: () => void): void;
  /** Tells the other instances on this database to look now (rings fold while one is in flight). */
  ring(kind: RingKind): void;
  /** Stops this boundary's duties; the database's listener closes with its last boundary. */
  close(): Promise<void>;
}

interface DutyState extends DutyOptions {
  everyMs: number;
  dueMs: number;
  running: boolean;
  again: boolean;
}

interface DatabaseBell {
  listener: DoorbellListener;
  ringers: Map<RingKind, DoorbellRinger>;
  /** per kind of ring, what hears it */
  heard: Map<RingKind, Set<() => void>>;
  users: number;
}

export interface SupervisorOptions {
  instanceId: string;
  logger: Logger;
  /** the cadence of duties that name none (a test makes it long to show that a ring alone wakes them) */
  pollMs?: number;
}

export class ClusterSupervisor {
  readonly instanceId: string;
  readonly pollMs: number;
  private readonly duties = new Set<DutyState>();
  private readonly bells = new Map<Doorbell, DatabaseBell>();
  private timer: NodeJS.Timeout | null = null;
  private timerDueMs = Infinity;
  private closed = false;

  constructor(private readonly options: SupervisorOptions) {
    this.instanceId = options.instanceId;
    this.pollMs = options.pollMs ?? CLUSTER_POLL_MS;
  }

  /** A duty of the instance (not of one boundary), due first one cadence from now. */
  duty(options: DutyOptions): Duty {
    const state: DutyState = { ...options, everyMs: options.everyMs ?? this.pollMs, dueMs: performance.now() + (options.everyMs ?? this.pollMs), running: false, again: false };
    this.duties.add(state);
    this.schedule();
    return {
      wake: () => this.makeDue(state, 0),
      dueIn: (ms) => this.makeDue(state, ms),
      stop: () => {
        this.duties.delete(state);
        this.schedule();
      },
    };
  }

  /** The names of the duties registered, one per entry (what the loop runs). */
  dutyNames(): string[] {
    return [...this.duties].map((duty) => duty.name);
  }

  /** How many timers the loop holds: one while any duty is registered, else none. */
  get timers(): number {
    return this.timer === null ? 0 : 1;
  }

  /** The duties of a boundary on the database of `doorbell` (null: a database without one, whose duties only poll). */
  boundary(doorbell: Doorbell | null): ClusterDuties {
    const bell = doorbell ? this.bellOf(doorbell) : null;
    const own = new Set<Duty>();
    const listening: Array<[RingKind, () => void]> = [];
    let closed = false;
    const on = (kind: RingKind, heard: () => void) => {
      if (!bell || closed) return;
      const set = bell.heard.get(kind) ?? new Set<() => void>();
      set.add(heard);
      bell.heard.set(kind, set);
      listening.push([kind, heard]);
    };
    return {
      instanceId: this.instanceId,
      add: ({ wokenBy = [], ...options }) => {
        const duty = this.duty(options);
        own.add(duty);
        for (const kind of wokenBy) on(kind, duty.wake);
        return duty;
      },
      on,
      ring: (kind) => {
        if (!bell || closed) return;
        let ringer = bell.ringers.get(kind);
        if (!ringer) bell.ringers.set(kind, (ringer = new DoorbellRinger(doorbell!, `${kind}:${this.instanceId}`)));
        ringer.ring();
      },
      close: async () => {
        if (closed) return;
        closed = true;
        for (const duty of own) duty.stop();
        for (const [kind, heard] of listening) bell?.heard.get(kind)?.delete(heard);
        if (bell && --bell.users === 0) {
          this.bells.delete(doorbell!);
          await bell.listener.close();
        }
      },
    };
  }

  /** Stops the loop; the boundaries close their own duties and listeners first. */
  close(): void {
    this.closed = true;
    this.duties.clear();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private bellOf(doorbell: Doorbell): DatabaseBell {
    const known = this.bells.get(doorbell);
    if (known) {
      known.users++;
      return known;
    }
    const heard = new Map<RingKind, Set<() => void>>();
    const tell = (kinds: Iterable<RingKind>) => {
      for (const kind of kinds) for (const hear of heard.get(kind) ?? []) hear();
    };
    const listener = doorbell.listen(
      (payload) => {
        const ring = parseRing(payload);
        if (ring.from !== this.instanceId) tell([ring.kind]);
      },
      // rings sent while nobody listened are lost: everyone who waits for one looks for itself
      () => tell([...heard.keys()]),
    );
    const bell: DatabaseBell = { listener, ringers: new Map(), heard, users: 1 };
    this.bells.set(doorbell, bell);
    return bell;
  }

  private makeDue(state: DutyState, inMs: number): void {
    if (!this.duties.has(state)) return;
    state.dueMs = performance.now() + inMs;
    this.schedule();
  }

  /** Sets the one timer for the earliest duty due. */
  private schedule(): void {
    if (this.closed) return;
    let next = Infinity;
    for (const duty of this.duties) next = Math.min(next, duty.dueMs);
    if (next === this.timerDueMs && this.timer) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.timerDueMs = next;
    if (next === Infinity) return;
    this.timer = setTimeout(() => this.runDue(), Math.max(0, next - performance.now()));
    this.timer.unref();
  }

  private runDue(): void {
    this.timer = null;
    this.timerDueMs = Infinity;
    const now = performance.now();
    for (const duty of this.duties) if (duty.dueMs <= now) this.start(duty, now);
    this.schedule();
  }

  private start(duty: DutyState, now: number): void {
    duty.dueMs = now + duty.everyMs;
    if (duty.running) {
      duty.again = true;
      return;
    }
    duty.running = true;
    void (async () => {
      try {
        await duty.run();
      } catch (error) {
        // each duty reports its own failures; this is a bug's last stop, and the next run tries again
        this.options.logger.warn({ err: error, duty: duty.name }, 'a cluster duty failed');
      } finally {
        duty.running = false;
        if (duty.again) {
          duty.again = false;
          duty.dueMs = Math.min(duty.dueMs, performance.now());
        }
        this.schedule();
      }
    })();
  }
}

/** `kind:instance`; a bare instance id is an event ring of an instance from before the kinds. */
function parseRing(payload: string): { kind: RingKind; from: string } {
  const colon = payload.indexOf(':');
  const kind = payload.slice(0, colon);
  if (colon > 0 && RING_KINDS.has(kind)) return { kind: kind as RingKind, from: payload.slice(colon + 1) };
  return { kind: 'events', from: payload };
}
