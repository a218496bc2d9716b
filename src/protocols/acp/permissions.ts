import type { PermissionOption, PermissionOptionKind, RequestPermissionOutcome } from '@agentclientprotocol/sdk';
import type { HumanRequest } from '../../client/index.ts';

/**
 * A human request as ACP permission options (CONTRACT.md §22): an approval's allow_once,
 * allow_session and deny become allow_once, allow_always and reject_once; a plan question's options
 * are the question's own. The option id is agentd's decision, so the answer needs no table back.
 * Options that need typed words (a plan question's `custom`, a budget's `raise`) cannot be answered
 * by a permission dialog and are left out; an editor that wants them uses agentd's own API.
 */
const NEEDS_WORDS = new Set(['custom', 'raise']);
const REJECTING = new Set(['deny', 'stay', 'cancel', 'stop', 'request_changes']);
const OPTION_NAMES: Record<string, string> = {
  allow_once: 'Allow once',
  allow_session: 'Allow for this session',
  deny: 'Deny',
  allow: 'Allow',
  enter: 'Enter plan mode',
  stay: 'Stay out of plan mode',
  approve: 'Approve the plan',
  request_changes: 'Ask for changes',
  cancel: 'Cancel the plan',
};

export function permissionOptions(request: HumanRequest): PermissionOption[] {
  return request.options
    .filter((option) => !NEEDS_WORDS.has(option))
    .map((option) => ({ optionId: option, name: OPTION_NAMES[option] ?? option, kind: optionKind(request.kind, option) }));
}

function optionKind(requestKind: string, option: string): PermissionOptionKind {
  if (option === 'allow_session') return 'allow_always';
  if (requestKind !== 'plan_question' && REJECTING.has(option)) return 'reject_once';
  return 'allow_once';
}

/** The decision for agentd's resolve, or null when the editor cancelled the dialog. */
export function decisionOf(request: HumanRequest, outcome: RequestPermissionOutcome): { decision: string; value?: string } | null {
  if (outcome.outcome !== 'selected' || !request.options.includes(outcome.optionId)) return null;
  return outcome.optionId === 'request_changes' ? { decision: outcome.optionId, value: '(no details given in the editor)' } : { decision: outcome.optionId };
}
