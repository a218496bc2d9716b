/**
 * `agentd/client/ai-sdk` (CONTRACT.md §22): a Vercel AI SDK `ChatTransport`, so that `useChat` (or
 * the SDK's `Chat` anywhere) drives agentd. A user message is a turn of the chat's agentd session;
 * the turn's events stream back as UI message chunks (ai-sdk-chunks.ts). A tool approval ends the
 * stream with `tool-approval-request`; the app answers with the AI SDK's own
 * `addToolApprovalResponse`, and with `sendAutomaticallyWhen:
 * lastAssistantMessageIsCompleteWithApprovalResponses` the SDK sends the messages again: the answer
 * is resolved here (POST /v1/requests/:id/resolve) and the same turn streams on. `reconnectToStream`
 * resumes by Last-Event-ID from the server's own replay window: no store, no Redis.
 *
 * The `ai` package is the app's own (a peer dependency); this module imports only its types.
 */
import type { ChatTransport, UIMessage, UIMessageChunk } from 'ai';
import { createClient, type AgentdClient } from './client.ts';
import { AgentdError } from './errors.ts';
import { isReplayReset } from './event-types.ts';
import type { EventSubscription } from './event-stream.ts';
import { newTurnLink, TurnChunks, type TurnLink } from './ai-sdk-chunks.ts';

export interface AgentdChatTransportOptions {
  /** e.g. http://127.0.0.1:4096 (the server needs `--cors-origin` for a page of another origin) */
  baseUrl: string;
  token?: string;
  /** the agentd session every chat of this transport talks to; without it each chat gets a new one */
  sessionId?: string;
  /** the directory of the sessions this transport creates (default: the server's first workspace root) */
  cwd?: string;
  /** a fetch implementation (default: the global one) */
  fetch?: typeof fetch;
}

const ACTIVE = new Set(['queued', 'running', 'waiting_for_input']);

export function agentdChatTransport<Message extends UIMessage = UIMessage>(options: AgentdChatTransportOptions): ChatTransport<Message> {
  if (options.sessionId !== undefined && options.cwd !== undefined) throw new TypeError('agentdChatTransport: give sessionId or cwd, not both');
  const client = createClient({ baseUrl: options.baseUrl, token: options.token, fetch: options.fetch });
  /** per chatId: its session, its turn and where its stream got to */
  const links = new Map<string, TurnLink>();
  const linkOf = (chatId: string) => {
    let link = links.get(chatId);
    if (!link) links.set(chatId, (link = newTurnLink(options.sessionId ?? null)));
    return link;
  };

  return {
    async sendMessages({ chatId, messages, abortSignal, trigger }) {
      const link = linkOf(chatId);
      const last = messages.at(-1);
      if (trigger === 'regenerate-message') return failed('agentd does not regenerate an answer: send the message again as a new one');
      if (last?.role === 'assistant') {
        const answered = await answerApprovals(client, link, last);
        if (answered !== null) return failed(answered);
        return streamTurn(client, link, abortSignal, link.lastEventId);
      }
      const input = textOf(last);
      if (input === '') return failed('the message has no text to send to agentd');
      try {
        link.sessionId ??= (await client.createSession({ body: options.cwd === undefined ? {} : { cwd: options.cwd }, signal: abortSignal })).id;
        // the stream is open before the turn is submitted, so none of its events is missed
        const events = client.events({ sessionId: link.sessionId, signal: abortSignal });
        await events.opened;
        const turn = await client.submitTurn(link.sessionId, input, { signal: abortSignal });
        Object.assign(link, { turnId: turn.id, lastEventId: null });
        return chunkStream(link, events, [{ type: 'start' }]);
      } catch (error) {
        return failed(describe(error));
      }
    },

    async reconnectToStream({ chatId, abortSignal }) {
      const link = linkOf(chatId);
      if (link.turnId === null) {
        // a page loaded again: the session's newest turn, if it is still running, replayed from the window's start
        if (link.sessionId === null) return null;
        const newest = (await client.listTurns({ query: { sessionId: link.sessionId }, signal: abortSignal })).data[0];
        if (!newest || !ACTIVE.has(newest.status)) return null;
        Object.assign(link, { turnId: newest.id, lastEventId: 0 });
      }
      const turn = await client.getTurn({ path: { id: link.turnId! }, signal: abortSignal });
      if (!ACTIVE.has(turn.status) || link.approvals.size > 0) return null;
      return streamTurn(client, link, abortSignal, link.lastEventId ?? 0);
    },
  };
}

/** The turn's events from `lastEventId` on (a resume: nothing before it, nothing twice). */
async function streamTurn(client: AgentdClient, link: TurnLink, signal: AbortSignal | undefined, lastEventId: number | null): Promise<ReadableStream<UIMessageChunk>> {
  if (link.sessionId === null || link.turnId === null) return failed('this chat has no agentd turn to continue');
  const events = client.events({ sessionId: link.sessionId, lastEventId, signal });
  return chunkStream(link, events, []);
}

/** The chunks of the link's turn as its events arrive, until the turn ends or waits for a human. */
function chunkStream(link: TurnLink, events: EventSubscription, first: UIMessageChunk[]): ReadableStream<UIMessageChunk> {
  const turnChunks = new TurnChunks(link);
  return new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of first) controller.enqueue(chunk);
    },
    async pull(controller) {
      try {
        for (;;) {
          const next = await events.next();
          if (next.done) {
            controller.enqueue({ type: 'error', errorText: 'the agentd event stream ended before the turn did' });
            return finishWith(controller, events);
          }
          const item = next.value;
          if (isReplayReset(item)) {
            // the server cannot replay from the id given (another server's, or past its window): say so, do not wait
            controller.enqueue({ type: 'error', errorText: 'agentd could not resume this stream from its last event id (the id is another server\'s, or older than its replay window): reload the conversation' });
            return finishWith(controller, events);
          }
          if (item.turnId !== link.turnId) continue;
          const step = turnChunks.translate(item);
          for (const chunk of step.chunks) controller.enqueue(chunk);
          if (step.ends) return finishWith(controller, events);
          if (step.chunks.length > 0) return;
        }
      } catch (error) {
        controller.enqueue({ type: 'error', errorText: describe(error) });
        finishWith(controller, events);
      }
    },
    cancel() {
      events.close();
    },
  });
}

function finishWith(controller: ReadableStreamDefaultController<UIMessageChunk>, events: EventSubscription): void {
  events.close();
  controller.close();
}

/**
 * Resolves the approvals the app answered through addToolApprovalResponse since the last stream:
 * approved → allow_once, denied → deny (its reason goes to the model). Null when done, else why not.
 */
async function answerApprovals(client: AgentdClient, link: TurnLink, message: UIMessage): Promise<string | null> {
  const answers = message.parts.flatMap((part) => {
    const approval = 'approval' in part ? (part.approval as { id: string; approved?: boolean; reason?: string } | undefined) : undefined;
    return 'state' in part && part.state === 'approval-responded' && approval && approval.approved !== undefined ? [{ id: approval.id, approved: approval.approved, reason: approval.reason }] : [];
  });
  const fresh = answers.filter((answer) => link.approvals.has(answer.id));
  if (fresh.length === 0) {
    return answers.length > 0
      ? 'this approval was already answered: agentd takes one answer per request'
      : 'nothing to send: the last message is the assistant\'s and answers no approval';
  }
  for (const answer of fresh) {
    try {
      await client.resolveRequest({ path: { id: answer.id }, body: answer.approved ? { decision: 'allow_once' } : { decision: 'deny', ...(answer.reason ? { value: answer.reason } : {}) } });
    } catch (error) {
      return describe(error);
    } finally {
      const callId = link.approvals.get(answer.id)!;
      link.approvals.delete(answer.id);
      if (!answer.approved) link.denied.add(callId);
    }
  }
  return null;
}

function textOf(message: UIMessage | undefined): string {
  if (!message) return '';
  return message.parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n').trim();
}

/** A stream of one error chunk: the chat shows the error, nothing waits. */
function failed(errorText: string): Promise<ReadableStream<UIMessageChunk>> {
  return Promise.resolve(
    new ReadableStream<UIMessageChunk>({
      start(controller) {
        controller.enqueue({ type: 'error', errorText });
        controller.close();
      },
    }),
  );
}

function describe(error: unknown): string {
  if (error instanceof AgentdError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
