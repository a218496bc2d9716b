import { boundEventText } from '../../domain/event-text.ts';
import type { StepListener } from '../../agent/model-step.ts';
import type { ToolKind } from '../../agent/providers/types.ts';
import type { EventHub } from '../event-hub.ts';

/**
 * The payload of `tool.started`, `tool.arguments.updated` and `tool.updated`: one call's identity
 * and its arguments so far (null before any arrived), bounded like all event text.
 */
export function toolCallPayload(callId: string, name: string, kind: ToolKind, argumentsText: string | null, itemId?: string) {
  const bounded = argumentsText === null ? null : boundEventText(argumentsText);
  return { callId, name, kind, argumentsEncrypted: false, async: false, argumentsTruncated: bounded?.truncated ?? false, arguments: bounded?.text ?? null, ...withItemId(itemId) };
}

/** The optional `itemId` of text, reasoning and tool events: present only when the provider gave one. */
export function withItemId(itemId: string | undefined): { itemId?: string } {
  return itemId === undefined ? {} : { itemId };
}

/** Provider stream → SSE events of one turn, with event text bounded and truncation flags set. */
export function streamEventListener(hub: EventHub, sessionId: string, turnId: string): StepListener {
  return {
    textDelta: (text, itemId) => hub.emit('response.text.delta', sessionId, turnId, { ...boundEventText(text), ...withItemId(itemId) }),
    reasoningDelta: (text, itemId) => hub.emit('response.reasoning.delta', sessionId, turnId, { ...boundEventText(text), ...withItemId(itemId) }),
    toolStarted: (callId, name, kind, itemId) => hub.emit('tool.started', sessionId, turnId, toolCallPayload(callId, name, kind, null, itemId)),
    toolArguments: (callId, name, kind, soFar, itemId) => hub.emit('tool.arguments.updated', sessionId, turnId, toolCallPayload(callId, name, kind, soFar, itemId)),
    attemptFailed: (error, attempt, delayMs, startedCallIds) => {
      for (const callId of startedCallIds) hub.emit('tool.retracted', sessionId, turnId, { callId, displayOnly: true });
      if (error.status === 429 || error.status === 529) {
        const bounded = boundEventText(`${error.provider} is rate limiting (HTTP ${error.status}); retrying in ${Math.round(delayMs / 100) / 10}s`);
        hub.emit('provider.limit', sessionId, turnId, { text: bounded.text, warning: bounded.text, truncated: bounded.truncated });
      }
      hub.emit('response.attempt.failed', sessionId, turnId, { displayOnly: true, attempt, status: error.status, reason: error.code, retryInMs: delayMs });
      hub.emit('response.attempt.discarded', sessionId, turnId, { displayOnly: true, attempt });
      const reason = boundEventText(error.message);
      hub.emit('response.restarted', sessionId, turnId, { reason: reason.text, truncated: reason.truncated, displayOnly: true });
    },
  };
}
