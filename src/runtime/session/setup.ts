/**
 * Repository setup of sessions created with `repository` (CONTRACT.md §4, SPEC.md §6): one
 * background checkout per session, reported as `session.setup.*` events, awaited by the session's
 * turns before they start.
 *
 * State lives in memory. After a restart there is no entry, and the checkout directory decides:
 * it only exists once a checkout completed (see workspace/checkout.ts), so a setup that a restart
 * cut short, or one that failed before it, fails the session's next turn. A failed setup is never
 * retried: every later turn of the session fails with the same message.
 */
import type { Logger } from 'pino';
import { uuidv7 } from '../../domain/ids.ts';
import type { SessionRecord } from '../../domain/session.ts';
import { checkoutIsComplete, removeCheckout, runCheckout } from '../../workspace/checkout.ts';
import type { RepositorySource } from '../../workspace/repository-source.ts';
import type { WorkspaceCommands } from '../../workspace/workspace-commands.ts';
import type { EventHub } from '../event-hub.ts';

/** A turn cannot start because its session's repository setup failed. */
export class SetupFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SetupFailed';
  }
}

interface Setup {
  abort: AbortController;
  /** settles (never rejects) when the checkout completed or failed */
  done: Promise<void>;
  settled: boolean;
  failure: string | null;
}

const MISSING_CHECKOUT = 'the checkout is missing: its setup did not complete before the server restarted, or the directory was removed';

export class RepositorySetups {
  private readonly setups = new Map<string, Setup>();

  constructor(
    private readonly hub: Pick<EventHub, 'emit'>,
    private readonly logger: Logger,
    /** where git and the removals run: where the boundary's tools run */
    private readonly commands: WorkspaceCommands,
    private readonly timeoutMs?: number,
  ) {}

  /** Starts the session's checkout in the background; progress and outcome arrive as events. */
  start(session: SessionRecord, repository: RepositorySource): void {
    const setup: Setup = { abort: new AbortController(), done: Promise.resolve(), failure: null, settled: false };
    this.setups.set(session.id, setup);
    setup.done = this.run(session, repository, setup).finally(() => {
      setup.settled = true;
    });
  }

  /** True while the session's checkout is still being made. */
  isSettingUp(sessionId: string): boolean {
    const setup = this.setups.get(sessionId);
    return setup !== undefined && !setup.settled;
  }

  /** True while any session's checkout is still being made. */
  anyRunning(): boolean {
    for (const setup of this.setups.values()) if (!setup.settled) return true;
    return false;
  }

  /**
   * Resolves once the session can run turns: at once for a session without a server-owned
   * checkout. Rejects with SetupFailed, or with the signal's reason when `signal` aborts first.
   */
  async ready(session: SessionRecord, signal: AbortSignal): Promise<void> {
    if (!session.ownsCheckout) return;
    const setup = this.setups.get(session.id);
    if (setup) {
      await settledOrAborted(setup.done, signal);
      if (setup.failure !== null) throw new SetupFailed(setup.failure);
      return;
    }
    if (!checkoutIsComplete(session.cwd)) throw new SetupFailed(MISSING_CHECKOUT);
  }

  /** The session is gone: stops its checkout, waits for git to end, and removes the directory. */
  async remove(session: SessionRecord, keepDirectory = false): Promise<void> {
    if (!session.ownsCheckout) return;
    const setup = this.setups.get(session.id);
    if (setup) {
      setup.abort.abort();
      await setup.done;
      this.setups.delete(session.id);
    }
    if (keepDirectory) return;
    await removeCheckout(session.cwd, this.commands).catch((error: unknown) => {
      this.logger.error({ err: error, sessionId: session.id }, 'could not remove the checkout of a deleted session');
    });
  }

  /** Server shutdown: stops every running checkout (a restarted server then reports them failed). */
  async stopAll(): Promise<void> {
    for (const setup of this.setups.values()) setup.abort.abort();
    await Promise.all([...this.setups.values()].map((setup) => setup.done));
  }

  private async run(session: SessionRecord, repository: RepositorySource, setup: Setup): Promise<void> {
    const url = session.repository?.url ?? repository.source;
    // Until the clone tells, "HEAD" stands for the remote's default branch.
    this.hub.emit('session.setup.started', session.id, null, { repository: url, branch: repository.ref ?? 'HEAD' });
    try {
      const { branch } = await runCheckout(repository, session.cwd, {
        commands: this.commands,
        signal: setup.abort.signal,
        timeoutMs: this.timeoutMs,
        onStep: ({ command }) => {
          const operationId = uuidv7();
          this.hub.emit('session.setup.step', session.id, null, { operationId, command, status: 'running' });
          return (status) => this.hub.emit('session.setup.step', session.id, null, { operationId, command, status });
        },
      });
      this.hub.emit('session.setup.completed', session.id, null, { repository: url, branch });
      // From now on the directory itself answers ready(); a failure has to stay remembered.
      if (this.setups.get(session.id) === setup) this.setups.delete(session.id);
    } catch (error) {
      setup.failure = error instanceof Error ? error.message : String(error);
      this.logger.warn({ sessionId: session.id }, 'repository setup failed');
      this.hub.emit('session.setup.failed', session.id, null, { message: setup.failure });
    }
  }
}

function settledOrAborted(done: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    void done.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}
