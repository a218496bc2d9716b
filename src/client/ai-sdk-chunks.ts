/**
 * agentd events of one turn → the AI SDK's UI message chunks (CONTRACT.md §22): answer text and
 * reasoning as text/reasoning parts, each tool call as a dynamic tool (its input streaming, then
 * available, then its output), a tool approval as `tool-approval-request` (its approvalId is the
 * agentd request id), the structured result as a `data-result` part. Type-only imports of `ai`:
 * the package is the app's (a peer dependency), never bundled here.
 */
import type { UIMessageChunk } from 'ai';
import type { AgentdEvent } from './event-types.ts';

/** Human requests the AI SDK's approval call can answer: allowed or denied. */
const APPROVAL_KINDS = new Set(['tool_approval', 'root_access']);

/** What a chat remembers of its turn between streams (an approval ends one stream, its answer starts the next). */
export interface TurnLink {
  sessionId: string | null;
  turnId: string | null;
  /** the id of the last event turned into chunks: where a reconnect resumes (Last-Event-ID) */
  lastEventId: number | null;
  /** tool calls shown in this chat's message, by callId: their output may follow in a later stream */
  calls: Set<string>;
  /** approvals asked and not answered yet: agentd request id → callId */
  approvals: Map<string, string>;
  /** calls whose approval was denied: their output is shown as denied */
  denied: Set<string>;
}

export function newTurnLink(sessionId: string | null): TurnLink {
  return { sessionId, turnId: null, lastEventId: null, calls: new Set(), approvals: new Map(), denied: new Set() };
}

/** How a stream goes on after an event: on, or ended (the turn ended, or it waits for a human). */
export type ChunkStep = { chunks: UIMessageChunk[]; ends: boolean };

/** Turns the events of one turn into chunks, in order; one per stream. */
export class TurnChunks {
  private open: { kind: 'text' | 'reasoning'; id: string } | null = null;
  private readonly argumentsSoFar = new Map<string, string>();
  /** the newest call whose arguments are complete and whose output has not come: the one an approval is about */
  private awaiting: string | null = null;

  constructor(private readonly link: TurnLink) {}

  translate(event: AgentdEvent): ChunkStep {
    this.link.lastEventId = event.id;
    const chunks: UIMessageChunk[] = [];
    const go = (ends = false): ChunkStep => ({ chunks, ends });
    switch (event.type) {
      case 'response.text.delta':
      case 'response.reasoning.delta': {
        const kind = event.type === 'response.text.delta' ? 'text' : 'reasoning';
        if (this.open?.kind !== kind) {
          chunks.push(...this.close());
          this.open = { kind, id: `${kind}-${event.turnId}-${event.id}` };
          chunks.push({ type: `${kind}-start`, id: this.open.id });
        }
        chunks.push({ type: `${kind}-delta`, id: this.open.id, delta: event.data.text });
        return go();
      }
      case 'tool.started':
        chunks.push(...this.close());
        this.link.calls.add(event.data.callId);
        this.argumentsSoFar.set(event.data.callId, '');
        chunks.push({ type: 'tool-input-start', toolCallId: event.data.callId, toolName: event.data.name, dynamic: true });
        return go();
      case 'tool.arguments.updated': {
        const before = this.argumentsSoFar.get(event.data.callId);
        const now = event.data.arguments ?? '';
        if (before === undefined || !now.startsWith(before) || now === before) return go();
        this.argumentsSoFar.set(event.data.callId, now);
        chunks.push({ type: 'tool-input-delta', toolCallId: event.data.callId, inputTextDelta: now.slice(before.length) });
        return go();
      }
      case 'tool.updated':
        chunks.push(...this.close());
        this.link.calls.add(event.data.callId);
        this.awaiting = event.data.callId;
        chunks.push({ type: 'tool-input-available', toolCallId: event.data.callId, toolName: event.data.name, input: parsedArguments(event.data.arguments), dynamic: true });
        return go();
      case 'tool.finished': {
        const { callId } = event.data;
        if (this.awaiting === callId) this.awaiting = null;
        if (!this.link.calls.has(callId)) return go();
        if (this.link.denied.delete(callId)) chunks.push({ type: 'tool-output-denied', toolCallId: callId });
        else chunks.push({ type: 'tool-output-available', toolCallId: callId, output: event.data.output, dynamic: true });
        return go();
      }
      case 'tool.retracted':
        if (this.link.calls.has(event.data.callId)) chunks.push({ type: 'tool-output-error', toolCallId: event.data.callId, errorText: 'the model attempt that started this call failed; it was withdrawn', dynamic: true });
        return go();
      case 'request.created': {
        chunks.push(...this.close());
        const request = event.data;
        if (APPROVAL_KINDS.has(request.kind) && this.awaiting !== null) {
          this.link.approvals.set(request.id, this.awaiting);
          chunks.push({ type: 'tool-approval-request', approvalId: request.id, toolCallId: this.awaiting, reason: request.prompt });
        } else {
          // a plan question or a budget: answered with the agentd client (resolveRequest), not the AI SDK's approval call
          chunks.push({ type: 'data-request', id: request.id, data: request });
        }
        chunks.push({ type: 'finish' });
        return go(true);
      }
      case 'turn.result':
        chunks.push({ type: 'data-result', data: event.data.result });
        return go();
      case 'turn.completed':
        chunks.push(...this.close(), { type: 'finish', finishReason: 'stop' });
        return go(true);
      case 'turn.failed':
        chunks.push(...this.close(), { type: 'error', errorText: event.data.error ?? 'the turn failed' });
        return go(true);
      case 'turn.cancelled':
        chunks.push(...this.close(), { type: 'abort', reason: 'the turn was cancelled' });
        return go(true);
      default:
        return go();
    }
  }

  /** Ends the open text or reasoning part, if one is open. */
  close(): UIMessageChunk[] {
    const open = this.open;
    this.open = null;
    return open ? [{ type: `${open.kind}-end`, id: open.id }] : [];
  }
}

function parsedArguments(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
