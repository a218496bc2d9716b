/**
 * A command the user runs with `!command` (CONTRACT.md §24): the turn runs it as a `shell` call of
 * its own, through the very policy the model's calls go through, and asks the model nothing. Its
 * call and output stay in the session's history, so the next turn's model sees both.
 */
import { randomUUID } from 'node:crypto';
import type { RecordedModelStep } from '../domain/turn-step.ts';
import type { CanonicalItem } from './providers/types.ts';

/**
 * The step the call is recorded under, as if a model response had made it (nothing billed, no
 * response): a turn taken over (--cluster) resumes the call as any other, given as interrupted
 * unless it still waited for its approval.
 */
export const USER_COMMAND_STEP: RecordedModelStep = { usage: null, completion: { status: 'completed' }, responseId: null, model: null, stopReason: null, apiDurationMs: 0 };

export function userCommandItem(command: string): CanonicalItem {
  return { type: 'function_call', call_id: `call_user_${randomUUID().replaceAll('-', '')}`, name: 'shell', arguments: JSON.stringify({ command }) };
}

/**
 * A turn's stored text marks it as a command: its input is the command, its user text the line
 * the user typed (`!` and the command). A prompt typed as `!ls` keeps user text equal to input, so
 * the mark survives the row alone, which is all a resuming instance has.
 */
export function userCommandText(command: string): { input: string; userText: string } {
  return { input: command, userText: `!${command}` };
}

export function userCommandOf(text: { input: string; userText: string }): string | null {
  return text.userText === `!${text.input}` ? text.input : null;
}
