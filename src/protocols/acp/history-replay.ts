import type { SessionUpdate } from '@agentclientprotocol/sdk';
import type { HistoryPage } from '../../client/index.ts';
import { toolKind, toolTitle } from './tool-calls.ts';

type HistoryTurn = HistoryPage['data'][number]['turn'];

/**
 * One stored turn as the `session/update`s of `session/load` (ACP replays a conversation as the
 * notifications that built it): the user's words, then the turn's canonical items in order —
 * assistant text, reasoning summaries, each tool call completed with its output. A turn whose
 * items are empty (a failed one, an active one's provisional entry) shows its assistant text.
 */
export function replayOf(turn: HistoryTurn): SessionUpdate[] {
  const updates: SessionUpdate[] = [];
  if (turn.userText !== '') updates.push({ sessionUpdate: 'user_message_chunk', content: text(turn.userText) });
  let answered = false;
  const names = new Map<string, string>();
  for (const raw of turn.items) {
    const item = (raw ?? {}) as Record<string, unknown>;
    if (item.type === 'message' && item.role === 'assistant') {
      const words = textOf(item.content);
      if (words !== '') {
        updates.push({ sessionUpdate: 'agent_message_chunk', content: text(words) });
        answered = true;
      }
    } else if (item.type === 'reasoning') {
      const words = textOf(item.summary);
      if (words !== '') updates.push({ sessionUpdate: 'agent_thought_chunk', content: text(words) });
    } else if ((item.type === 'function_call' || item.type === 'custom_tool_call') && typeof item.call_id === 'string') {
      const name = typeof item.name === 'string' ? item.name : 'tool';
      const args = typeof item.arguments === 'string' ? item.arguments : typeof item.input === 'string' ? item.input : null;
      names.set(item.call_id, name);
      updates.push({ sessionUpdate: 'tool_call', toolCallId: item.call_id, title: toolTitle(name, args), kind: toolKind(name), status: 'in_progress' });
    } else if ((item.type === 'function_call_output' || item.type === 'custom_tool_call_output') && typeof item.call_id === 'string' && names.has(item.call_id)) {
      const output = textOf(item.output);
      updates.push({ sessionUpdate: 'tool_call_update', toolCallId: item.call_id, status: 'completed', content: [{ type: 'content', content: text(output) }] });
    }
  }
  if (!answered && turn.assistantText) updates.push({ sessionUpdate: 'agent_message_chunk', content: text(turn.assistantText) });
  if (turn.error) updates.push({ sessionUpdate: 'agent_message_chunk', content: text(`\n[turn ${turn.status ?? 'failed'}: ${turn.error}]`) });
  return updates;
}

function text(words: string) {
  return { type: 'text' as const, text: words };
}

/** A string, or the text of an array of content parts. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => (typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : ''))
    .join('');
}
