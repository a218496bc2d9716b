/**
 * The contract between the agent loop and a tool. A tool call arrives as raw input (a JSON
 * arguments string for function tools, free text for custom tools); the tool parses it, says what
 * it will touch (`plan`, which the approval policy judges), and then runs.
 */
import type { ToolSpec } from '../providers/types.ts';
import type { ToolExecutor } from '../../exec/executor.ts';

import type { HumanDecision, HumanRequestKind } from '../../domain/human-request.ts';

export type { HumanDecision, HumanRequestKind };

export interface ToolContext {
  /** the session working directory, canonical (a guest path when the executor is the sandbox) */
  cwd: string;
  /** every allowed workspace root, canonical (the guest workspace in the sandbox) */
  roots: readonly string[];
  /** where every execution happens: the boundary's executor; a plain host one when absent */
  executor?: ToolExecutor;
  signal: AbortSignal;
  /** streams partial output (shell stdout and stderr) while the tool runs */
  onOutput(chunk: string): void;
  /** raises a HumanRequest and waits for its resolution */
  requestHuman(kind: HumanRequestKind, prompt: string, options: string[]): Promise<HumanDecision>;
  /** whether the session is in plan mode now; plan tools use it to avoid pointless questions */
  planMode?: boolean;
  /** no human decided this call (see authorizeToolCall); shell then runs it confined, read-only */
  unattended?: boolean;
}

/** What a call will touch, for the approval policy. */
export interface ToolPlan {
  /** true when the tool itself never changes anything (files, processes, the machine) */
  readOnly: boolean;
  /** paths the call reads or writes, as the model wrote them (relative to the cwd or absolute) */
  paths: string[];
  /** shell only: the command, which the policy inspects to decide whether it is provably read-only */
  command?: string[] | string;
}

/** A state change the agent loop must carry out after the call. */
export interface ToolEffects {
  planMode?: 'enter' | 'exit';
  plan?: PlanUpdate;
}

export type PlanStepStatus = 'pending' | 'in_progress' | 'completed';

export interface PlanUpdate {
  explanation: string | null;
  steps: { step: string; status: PlanStepStatus }[];
}

export interface ToolOutcome {
  /** text for the model */
  output: string;
  /** the output was shortened to fit its budget */
  truncated: boolean;
  /** false when the call failed; the output then explains why, so the model can change course */
  ok: boolean;
  effects?: ToolEffects;
}

export interface Tool<Args = unknown> {
  name: string;
  kind: 'function' | 'custom';
  description: string;
  /** JSON schema of the arguments (function tools only) */
  parameters?: Record<string, unknown>;
  /** custom tools only: the accepted input format */
  format?: ToolSpec['format'];
  /**
   * The tool runs programs or writes files (shell, apply_patch): a tenant without a sandbox runner
   * is not offered it (tenancy/tenant-hosting.ts).
   */
  executes?: boolean;
  /** turns raw input into typed arguments; throws ToolError with a message for the model */
  parse(input: string): Args;
  plan(args: Args, ctx: Pick<ToolContext, 'cwd' | 'roots' | 'executor'>): ToolPlan;
  run(args: Args, ctx: ToolContext): Promise<ToolOutcome>;
}

/** An expected failure whose message is meant for the model (bad arguments, missing file, …). */
export class ToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolError';
  }
}

export function success(output: string, truncated = false, effects?: ToolEffects): ToolOutcome {
  return effects ? { output, truncated, ok: true, effects } : { output, truncated, ok: true };
}

export function failure(output: string, truncated = false): ToolOutcome {
  return { output, truncated, ok: false };
}
