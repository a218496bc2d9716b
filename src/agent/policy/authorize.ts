/**
 * The thin asynchronous shell around decideToolCall: asks the human as often as the policy says
 * (root_access first, then tool_approval), records allow_session approvals, and turns every
 * refusal or denial into the text the model receives as the call's output (with the human's
 * reason, when the deny carried one in `value`).
 */
import type { HumanDecision, HumanRequestKind } from '../tools/types.ts';
import { loadBashParser } from './bash-parser.ts';
import { decideToolCall, type PolicyCall, type PolicyContext } from './decide.ts';

/**
 * unattended: the call runs without any human decision about it (a read-only call); the runtime
 * runs such shell commands confined when it can.
 */
export type Authorization = { allowed: true; unattended: boolean } | { allowed: false; output: string };

export interface AuthorizationContext extends Omit<PolicyContext, 'sessionAllowances' | 'rootAccessGranted'> {
  /** the session's allowances; allow_session adds to it */
  sessionAllowances: Set<string>;
}

export const DENIED_OUTPUT =
  'The user denied this tool call. Do not retry it unchanged; choose another approach or ask the user how to proceed.';

/** What the model reads for a denied call: the fixed text, then the human's words if any. */
function deniedOutput(reason: string | undefined): string {
  const words = reason?.trim();
  return words ? `${DENIED_OUTPUT}\nThe user's reason: ${words}` : DENIED_OUTPUT;
}

export async function authorizeToolCall(
  call: PolicyCall,
  context: AuthorizationContext,
  requestHuman: (kind: HumanRequestKind, prompt: string, options: string[]) => Promise<HumanDecision>,
): Promise<Authorization> {
  // the policy reads shell commands with the WebAssembly bash parser, loaded once on first use
  if (call.plan.command !== undefined) await loadBashParser();
  let rootAccessGranted = false;
  for (;;) {
    const decision = decideToolCall(call, { ...context, rootAccessGranted });
    if (decision.action === 'run') return { allowed: true, unattended: decision.unattended };
    if (decision.action === 'refuse') return { allowed: false, output: decision.reason };
    const answer = await requestHuman(decision.kind, decision.prompt, decision.options);
    if (decision.kind === 'root_access') {
      if (answer.decision !== 'allow') return { allowed: false, output: deniedOutput(answer.value) };
      rootAccessGranted = true;
      continue;
    }
    if (answer.decision === 'allow_session') context.sessionAllowances.add(decision.allowanceKey);
    else if (answer.decision !== 'allow_once') return { allowed: false, output: deniedOutput(answer.value) };
    return { allowed: true, unattended: false };
  }
}
