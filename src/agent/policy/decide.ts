/**
 * The approval policy: a pure function from a planned tool call and the session's situation to run,
 * ask the human, or refuse. Checks run in this order, and the first that applies decides:
 *
 *   1. A shell command that can destroy the machine is refused, in every mode, yolo included; so
 *      is one whose program the parser cannot name before it runs ("unknown", CONTRACT.md §21:
 *      a computed program word, a script computed or piped at run time, a line it cannot read).
 *   2. A path outside every workspace root is refused.
 *   3. In plan mode, anything not read-only is refused, with a message saying so.
 *   4. A path outside the session cwd but inside a root asks `root_access` (allow, deny),
 *      unless already granted for this call or yolo is on.
 *   5. Read-only tools, and provably read-only shell commands, run.
 *   6. Anything else (apply_patch, other shell commands) runs if yolo is on or the session allowed
 *      its key (tool + command prefix), and otherwise asks `tool_approval`
 *      (allow_once, allow_session, deny).
 *
 * In a sandbox (CONTRACT.md §12) steps 1 to 3 hold as they are; nothing is ever asked: the sandbox
 * is what confines the call, so `root_access` (4) and `tool_approval` (6) give way to running it.
 *
 * The operator's rules (--permissions-file, permission-rules.ts) are consulted first: a `deny`
 * refuses before anything else, quoting the rule's pattern. Steps 1 to 4 then hold whatever a rule
 * says. An `ask` asks `tool_approval` every time, in place of 5 and 6 (yolo, the sandbox, a
 * read-only call and the session's allowances included). An `allow` answers the question of 6
 * without a human: the call runs unattended, so a shell command runs confined as any unattended
 * command does (read-only view, no network; literal words only where nothing confines it).
 */
import type { PathClassification } from '../../workspace/paths.ts';
import type { ToolPlan } from '../tools/types.ts';
import { analyzeCommand, keyOfCommand, type CommandAnalysis } from './command-analysis.ts';
import { judgeByRules, type PermissionRule, type RuleVerdict } from './permission-rules.ts';
import { rootAccessPrompt, toolApprovalPrompt } from './prompts.ts';

export interface PolicyCall {
  name: string;
  /** the complete arguments as the model sent them: a JSON string or a custom tool's text */
  input: string;
  plan: ToolPlan;
}

export interface PolicyContext {
  planMode: boolean;
  yolo: boolean;
  /** keys stored by allow_session decisions; see allowanceKey */
  sessionAllowances: ReadonlySet<string>;
  /** canonicalizeInside results for every path in the call's plan (for shell: its workdir first) */
  paths: readonly PathClassification[];
  /**
   * Unattended shell commands run confined (bubblewrap: read-only filesystem, no network). When
   * false they run on the host, and only commands provably read-only without a shell skip approval.
   */
  confinedExecution: boolean;
  /** every execution runs in the boundary's sandbox: auto-approved, never root_access */
  sandboxed?: boolean;
  /** the human already answered `allow` to root_access for this very call */
  rootAccessGranted?: boolean;
  /** the operator's rules (--permissions-file), in file order; none when absent */
  rules?: readonly PermissionRule[];
  /** the session cwd, canonical: file paths are matched against the rules relative to it */
  cwd?: string;
}

export type PolicyDecision =
  /** unattended: no human decided (a read-only call); such shell commands run confined */
  | { action: 'run'; unattended: boolean }
  | { action: 'ask'; kind: 'tool_approval'; prompt: string; options: string[]; allowanceKey: string }
  | { action: 'ask'; kind: 'root_access'; prompt: string; options: string[] }
  | { action: 'refuse'; reason: string };

const TOOL_APPROVAL_OPTIONS = ['allow_once', 'allow_session', 'deny'];
const ROOT_ACCESS_OPTIONS = ['allow', 'deny'];

export const PLAN_MODE_REFUSAL =
  'Refused: the session is in plan mode, where only read-only tools run. Investigate with read-only ' +
  'tools, then present your plan with exit_plan_mode; changes become possible once the user approves it.';

export function decideToolCall(call: PolicyCall, context: PolicyContext): PolicyDecision {
  const rule = ruleVerdictOf(call, context);
  if (rule?.action === 'deny') return { action: 'refuse', reason: ruleRefusal(call.name, rule.pattern) };
  const situation = { confined: context.confinedExecution, cwd: context.paths[0]?.resolved ?? null };
  const command = call.plan.command === undefined ? null : analyzeCommand(call.plan.command, situation);
  if (command?.danger) {
    return { action: 'refuse', reason: `Refused: ${command.danger}. Commands that can destroy the machine are never run.` };
  }
  if (command?.unknown) return { action: 'refuse', reason: unknownRefusal(command.unknown, call.name, context.rules) };
  const outside = context.paths.filter((entry) => entry.location === 'outside');
  if (outside.length > 0) {
    const listed = outside.map((entry) => entry.requested).join(', ');
    return { action: 'refuse', reason: `Refused: ${listed} is outside every allowed workspace root.` };
  }
  const readOnly = command === null ? call.plan.readOnly : command.readOnly;
  if (context.planMode && !readOnly) return { action: 'refuse', reason: PLAN_MODE_REFUSAL };
  const elsewhere = context.paths.filter((entry) => entry.location === 'root');
  if (elsewhere.length > 0 && !context.rootAccessGranted && !context.yolo && !context.sandboxed) {
    return { action: 'ask', kind: 'root_access', prompt: rootAccessPrompt(call.name, call.input, elsewhere), options: ROOT_ACCESS_OPTIONS };
  }
  const key = allowanceKey(call, command);
  if (rule?.action === 'ask') return askToolApproval(call, command, key);
  if (readOnly) return { action: 'run', unattended: true };
  if (context.yolo || context.sandboxed || context.sessionAllowances.has(key)) return { action: 'run', unattended: false };
  if (rule?.action === 'allow') return { action: 'run', unattended: true };
  return askToolApproval(call, command, key);
}

function askToolApproval(call: PolicyCall, command: CommandAnalysis | null, key: string): PolicyDecision {
  return {
    action: 'ask',
    kind: 'tool_approval',
    prompt: toolApprovalPrompt(call.name, call.input, command?.display ?? null),
    options: TOOL_APPROVAL_OPTIONS,
    allowanceKey: key,
  };
}

/**
 * An unknown command (CONTRACT.md §21) could be any program: one the dangerous-command rules refuse
 * (mkfs and reboot need no particular argument) and one any deny rule of the tool names.
 */
function unknownRefusal(why: string, tool: string, rules: readonly PermissionRule[] | undefined): string {
  const deny = rules?.find((rule) => rule.tool === tool && rule.action === 'deny');
  const couldBe = deny
    ? `it could be what the operator's permission rule for ${tool} with pattern ${JSON.stringify(deny.pattern)} denies`
    : 'agentd cannot tell which program runs, so it cannot rule out a command that can destroy the machine';
  return `Refused: ${why}, and ${couldBe}. Write the program name, and any script a shell or eval runs, literally.`;
}

export function ruleRefusal(tool: string, pattern: string): string {
  return `Refused by the operator's permission rule for ${tool} with pattern ${JSON.stringify(pattern)}. Do not retry it in another form; choose another approach or ask the user.`;
}

function ruleVerdictOf(call: PolicyCall, context: PolicyContext): RuleVerdict | null {
  if (!context.rules?.length) return null;
  // Stryker disable next-line StringLiteral: the fallback is reached only by a call that names no path, which has no path for the rules to place relative to it
  const cwd = context.cwd ?? context.paths[0]?.resolved ?? '/';
  return judgeByRules(context.rules, { tool: call.name, command: call.plan.command, paths: context.paths.map((entry) => entry.resolved), cwd });
}

/**
 * What allow_session remembers: the tool name, plus for shell the command's key (allowance-key.ts):
 * its first two words (`shell:git commit`) for a plain command that cannot be made to execute
 * something else, or else the whole normalised command, approving only that exact command again.
 */
export function allowanceKey(call: PolicyCall, command: CommandAnalysis | null = null): string {
  if (call.plan.command === undefined) return call.name;
  return `${call.name}:${command?.key ?? keyOfCommand(call.plan.command)}`;
}
