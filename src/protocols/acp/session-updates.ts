import type { SessionUpdate, ToolCallStatus } from '@agentclientprotocol/sdk';
import type { AgentdEvent } from '../../client/index.ts';
import { planEntries, toolKind, toolTitle } from './tool-calls.ts';

/**
 * agentd's events of one session as ACP `session/update`s (CONTRACT.md §22): text and reasoning
 * deltas are message and thought chunks; a tool call is `tool_call` (pending) when it starts,
 * `in_progress` once its arguments are complete, then `completed` with its output; the calls a
 * turn leaves unfinished (cancelled, failed) end `failed`; `update_plan` is also a `plan`.
 * It remembers each call's name and status, so it is one per session and fed in order.
 */
export class SessionUpdates {
  private readonly calls = new Map<string, { name: string; status: ToolCallStatus; turnId: string | null }>();

  translate(event: AgentdEvent): SessionUpdate[] {
    switch (event.type) {
      case 'response.text.delta':
        return [{ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: event.data.text } }];
      case 'response.reasoning.delta':
        return [{ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: event.data.text } }];
      case 'tool.started':
        return this.started(event.data.callId, event.data.name, event.data.arguments, event.turnId);
      case 'tool.updated':
        return this.argumentsComplete(event.data.callId, event.data.name, event.data.arguments, event.turnId);
      case 'tool.output.updated':
        return this.calls.has(event.data.callId) ? [{ sessionUpdate: 'tool_call_update', toolCallId: event.data.callId, content: [textContent(event.data.output)] }] : [];
      case 'tool.finished':
        return this.finished(event.data.callId, 'completed', event.data.output);
      case 'tool.retracted':
        return this.finished(event.data.callId, 'failed', 'withdrawn: the model attempt that started this call failed');
      case 'turn.completed':
      case 'turn.failed':
      case 'turn.cancelled':
        return this.turnEnded(event.turnId, `the turn was ${event.type.slice('turn.'.length)} before this call ended`);
      default:
        return [];
    }
  }

  private started(callId: string, name: string, args: string | null, turnId: string | null): SessionUpdate[] {
    if (this.calls.has(callId)) return [];
    this.calls.set(callId, { name, status: 'pending', turnId });
    return [{ sessionUpdate: 'tool_call', toolCallId: callId, title: toolTitle(name, args), kind: toolKind(name), status: 'pending', ...(args !== null ? { rawInput: parsedOrText(args) } : {}) }];
  }

  private argumentsComplete(callId: string, name: string, args: string | null, turnId: string | null): SessionUpdate[] {
    const updates = this.started(callId, name, args, turnId);
    const call = this.calls.get(callId)!;
    call.status = 'in_progress';
    updates.push({ sessionUpdate: 'tool_call_update', toolCallId: callId, status: 'in_progress', title: toolTitle(name, args), ...(args !== null ? { rawInput: parsedOrText(args) } : {}) });
    const entries = name === 'update_plan' ? planEntries(args) : null;
    if (entries) updates.push({ sessionUpdate: 'plan', entries });
    return updates;
  }

  private finished(callId: string, status: 'completed' | 'failed', output: string): SessionUpdate[] {
    const call = this.calls.get(callId);
    if (!call || call.status === 'completed' || call.status === 'failed') return [];
    call.status = status;
    return [{ sessionUpdate: 'tool_call_update', toolCallId: callId, status, content: [textContent(output)], rawOutput: { output } }];
  }

  /** Calls the turn left unfinished end failed; the turn's calls are then forgotten, so a long session does not grow the map. */
  private turnEnded(turnId: string | null, why: string): SessionUpdate[] {
    const updates: SessionUpdate[] = [];
    for (const [callId, call] of this.calls) {
      if (call.turnId !== turnId) continue;
      updates.push(...this.finished(callId, 'failed', why));
      this.calls.delete(callId);
    }
    return updates;
  }

  /** The call a human request is most likely about: the latest one waiting to run. */
  latestInProgress(): string | null {
    let latest: string | null = null;
    for (const [callId, call] of this.calls) if (call.status === 'in_progress') latest = callId;
    return latest;
  }
}

function textContent(text: string) {
  return { type: 'content' as const, content: { type: 'text' as const, text } };
}

function parsedOrText(args: string): unknown {
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}
