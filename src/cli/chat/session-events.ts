import type { AgentdClient, EventSubscription, StreamItem } from '../../client/index.ts';
import { describeError } from './errors.ts';
import type { ChatOutput } from './render.ts';

/** How long a new session's event stream may take to open before its first turn is sent anyway. */
const STREAM_OPEN_WAIT_MS = 5_000;

export interface Following {
  subscription: EventSubscription;
  /** resolves once the stream is open, or after a while regardless */
  opened: Promise<void>;
}

/**
 * Follows one session's events, resuming after `lastEventId`, and hands each to `render` while
 * `current()` says this subscription is still the chat's. A lost connection is said once, and its
 * return; a failed render (a refetch while the server is away again) does not end the following.
 */
export function followSession(client: AgentdClient, sessionId: string, lastEventId: number | null, output: ChatOutput, hooks: { render(item: StreamItem): Promise<void>; current(subscription: EventSubscription): boolean; ended(): boolean }): Following {
  let opened!: () => void;
  const open = new Promise<void>((resolve) => (opened = resolve));
  let connectionLost = false;
  const subscription = client.events({
    sessionId,
    lastEventId,
    onReconnect: () => {
      if (!connectionLost) output.notice('connection lost; reconnecting…');
      connectionLost = true;
    },
    onOpen: () => {
      opened();
      if (connectionLost) output.notice('reconnected');
      connectionLost = false;
    },
  });
  void (async () => {
    try {
      for await (const item of subscription) {
        if (!hooks.current(subscription)) continue;
        await hooks.render(item).catch((error: unknown) => output.error(describeError(error)));
      }
    } catch (error) {
      if (hooks.current(subscription) && !hooks.ended()) output.error(`events: ${describeError(error)}`);
    }
  })();
  const waited = new Promise<void>((resolve) => setTimeout(resolve, STREAM_OPEN_WAIT_MS).unref());
  return { subscription, opened: Promise.race([open, waited]) };
}
