import { authorizeToolCall } from '../../agent/policy/authorize.ts';
import { boundEventText } from '../../domain/event-text.ts';
import type { ToolRegistry } from '../../agent/tools/registry.ts';
import type { ToolCall, ToolCallResult } from '../../agent/loop.ts';
import { updateSessionFields } from '../../store/sessions.ts';
import { HumanRequestRefused } from './requests.ts';
import { toolCallPayload, withItemId } from './turn-events.ts';
import { isMcpToolName } from '../../mcp/tool-names.ts';
import { NO_TELEMETRY, recordToolCall, type RuntimeTelemetry } from '../../telemetry/runtime-telemetry.ts';
import type { ToolCallOutcome } from '../../telemetry/recorder.ts';
import type { TurnTools, TurnToolScope } from './tool-port.ts';
import type { PermissionRule } from '../../config/permissions-file.ts';

export interface TurnToolOptions {
  /** unattended shell commands run confined (bubblewrap was found working at start-up) */
  confinedExecution: boolean;
  /** a span and a count per call */
  telemetry?: RuntimeTelemetry;
  /** the operator's rules (--permissions-file), consulted before the built-in policy */
  permissionRules?: readonly PermissionRule[];
}

/** The tool label of a name the model made up: the label set stays the registry's. */
const UNKNOWN_TOOL = 'unknown';

type CallEnd = { result: ToolCallResult; outcome: ToolCallOutcome };

/**
 * One agent's view of the tools: every call goes through the approval policy (asking a human
 * through the agent's port when it must), runs on the boundary's executor (the sandbox when there
 * is one, with guest paths) with the turn's abort signal, and streams tool events.
 */
export function createTurnTools(scope: TurnToolScope, registry: ToolRegistry, options: TurnToolOptions = { confinedExecution: false }): TurnTools {
  const { hub, boundary, session, port } = scope;
  const { sessionId, turnId, signal } = port;
  const allowances = new Set(session.allowances);
  let planMode = session.planMode;
  const sandboxed = boundary.tools.sandboxed;
  const requestHuman: typeof port.askHuman = (kind, prompt, choices) => port.askHuman(kind, prompt, choices);

  const persistSessionState = async () => {
    await updateSessionFields(boundary.db, boundary.id, sessionId, { planMode, allowances: [...allowances] });
  };

  const telemetry = options.telemetry ?? NO_TELEMETRY;
  const execute = (call: ToolCall): Promise<ToolCallResult> =>
    recordToolCall(telemetry, { name: registry.has(call.name) ? call.name : UNKNOWN_TOOL, callId: call.callId }, signal, () => run(call));

  async function run(call: ToolCall): Promise<CallEnd> {
    const finish = (output: string, truncated: boolean, outcome: ToolCallOutcome): CallEnd => {
      const bounded = boundEventText(output);
      hub.emit('tool.finished', sessionId, turnId, { callId: call.callId, kind: call.kind, output: bounded.text, async: false, truncated: truncated || bounded.truncated, imageCount: 0, ...withItemId(call.itemId) });
      return { result: { output, truncated }, outcome };
    };
    hub.emit('tool.updated', sessionId, turnId, toolCallPayload(call.callId, call.name, call.kind, call.input, call.itemId));
    const context = { ...boundary.tools.viewOf(session.cwd), executor: boundary.tools.executor };
    const prepared = registry.prepare({ name: call.name, input: call.input }, context);
    if (!prepared.ok) return finish(prepared.outcome.output, prepared.outcome.truncated, 'error');

    const sizeBefore = allowances.size;
    // An MCP server runs on the host, outside any sandbox: its calls keep their approvals there.
    const inSandbox = sandboxed && !isMcpToolName(prepared.call.name);
    let authorization;
    try {
      authorization = await authorizeToolCall(
        prepared.call,
        { planMode, yolo: boundary.yolo, sessionAllowances: allowances, paths: prepared.call.paths, confinedExecution: options.confinedExecution && !sandboxed, sandboxed: inSandbox, rules: options.permissionRules, cwd: context.cwd },
        requestHuman,
      );
    } catch (error) {
      if (error instanceof HumanRequestRefused) return finish(error.message, false, 'denied');
      throw error;
    }
    if (allowances.size !== sizeBefore) await persistSessionState();
    if (!authorization.allowed) return finish(authorization.output, false, 'denied');
    // Cancelled while the approval was being stored: an approved change must not start after it.
    signal.throwIfAborted();

    const runCall = () => registry.run(prepared.call, {
      ...context,
      signal,
      planMode,
      unattended: authorization.unattended,
      onOutput: (chunk) => {
        const text = boundEventText(chunk);
        hub.emit('tool.output.updated', sessionId, turnId, { callId: call.callId, name: call.name, output: text.text, truncated: text.truncated, ...withItemId(call.itemId) });
      },
      requestHuman,
    });
    // A shell command run unattended on a confining host sees the workspace read-only (bubblewrap):
    // it cannot write, so the receipt's two walks of the cwd are spared.
    const confinedReadOnly = prepared.call.plan.command !== undefined && authorization.unattended && options.confinedExecution && !sandboxed;
    const mayWrite = !prepared.call.plan.readOnly && !confinedReadOnly;
    const outcome = mayWrite && scope.receipt ? await scope.receipt.around(runCall) : await runCall();
    signal.throwIfAborted();
    if (outcome.effects?.planMode) {
      planMode = outcome.effects.planMode === 'enter';
      await persistSessionState();
    }
    return finish(outcome.output, outcome.truncated, outcome.ok ? 'ok' : 'error');
  }

  return {
    specs: () => registry.specs,
    execute,
    planMode: () => planMode,
  };
}
