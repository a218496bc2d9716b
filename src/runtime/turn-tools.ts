import { authorizeToolCall } from '../agent/policy/authorize.ts';
import { boundEventText } from '../domain/event-text.ts';
import type { HumanDecision, HumanRequestKind } from '../agent/tools/types.ts';
import type { ToolRegistry } from '../agent/tools/registry.ts';
import type { ToolCall, ToolCallResult } from '../agent/loop.ts';
import { updateSessionFields } from '../store/sessions.ts';
import { HumanRequestRefused } from './requests.ts';
import type { BoundaryRuntime } from './boundary-runtime.ts';
import type { ActiveTurn } from './turns.ts';
import type { TurnTools } from './turn-runner.ts';

export interface TurnToolOptions {
  /** unattended shell commands run confined (bubblewrap was found working at start-up) */
  confinedExecution: boolean;
}

/**
 * One turn's view of the tools: every call goes through the approval policy (asking the human via
 * the request broker when it must), runs with the turn's abort signal, and streams tool events.
 */
export function createTurnTools(runtime: BoundaryRuntime, turn: ActiveTurn, registry: ToolRegistry, options: TurnToolOptions = { confinedExecution: false }): TurnTools {
  const { hub, boundary } = runtime;
  const session = turn.session;
  const sessionId = session.id;
  const turnId = turn.record.id;
  const allowances = new Set(session.allowances);
  let planMode = session.planMode;

  const requestHuman = async (kind: HumanRequestKind, prompt: string, options: string[]): Promise<HumanDecision> => {
    // A cancel that came while an earlier answer was being stored must not leave a request (and the
    // cancel) waiting forever: an aborted signal never fires 'abort' again.
    turn.abort.signal.throwIfAborted();
    let waitingWrite: Promise<void> = Promise.resolve();
    const answer = runtime.requests.ask(sessionId, turnId, kind, prompt, options, () => {
      waitingWrite = runtime.turns.setStatus(turn, 'waiting_for_input');
      waitingWrite.catch(() => {}); // awaited below; this only keeps a failed write from crashing the process
    });
    const onAbort = () => runtime.requests.cancelTurn(turnId, new Error('cancelled'));
    turn.abort.signal.addEventListener('abort', onAbort, { once: true });
    let decision: HumanDecision;
    try {
      decision = await answer;
    } finally {
      turn.abort.signal.removeEventListener('abort', onAbort);
      // The waiting write lands before the running write or the terminal one, never after them.
      await waitingWrite;
    }
    if (!turn.abort.signal.aborted) await runtime.turns.setStatus(turn, 'running');
    return decision;
  };

  const persistSessionState = async () => {
    await updateSessionFields(boundary.db, boundary.id, sessionId, { planMode, allowances: [...allowances] });
  };

  async function execute(call: ToolCall): Promise<ToolCallResult> {
    const finish = (output: string, truncated: boolean): ToolCallResult => {
      const bounded = boundEventText(output);
      hub.emit('tool.finished', sessionId, turnId, { callId: call.callId, kind: call.kind, output: bounded.text, async: false, truncated: truncated || bounded.truncated, imageCount: 0 });
      return { output, truncated };
    };
    const bounded = boundEventText(call.input);
    hub.emit('tool.updated', sessionId, turnId, { callId: call.callId, name: call.name, kind: call.kind, argumentsEncrypted: false, async: false, argumentsTruncated: bounded.truncated, arguments: bounded.text });
    const context = { cwd: session.cwd, roots: boundary.workspaceRoots };
    const prepared = registry.prepare({ name: call.name, input: call.input }, context);
    if (!prepared.ok) return finish(prepared.outcome.output, prepared.outcome.truncated);

    const sizeBefore = allowances.size;
    let authorization;
    try {
      authorization = await authorizeToolCall(
        prepared.call,
        { planMode, yolo: boundary.yolo, sessionAllowances: allowances, paths: prepared.call.paths, confinedExecution: options.confinedExecution },
        requestHuman,
      );
    } catch (error) {
      if (error instanceof HumanRequestRefused) return finish(error.message, false);
      throw error;
    }
    if (allowances.size !== sizeBefore) await persistSessionState();
    if (!authorization.allowed) return finish(authorization.output, false);
    // Cancelled while the approval was being stored: an approved change must not start after it.
    turn.abort.signal.throwIfAborted();

    const outcome = await registry.run(prepared.call, {
      ...context,
      signal: turn.abort.signal,
      planMode,
      unattended: authorization.unattended,
      onOutput: (chunk) => {
        const text = boundEventText(chunk);
        hub.emit('tool.output.updated', sessionId, turnId, { name: call.name, output: text.text, truncated: text.truncated });
      },
      requestHuman,
    });
    turn.abort.signal.throwIfAborted();
    if (outcome.effects?.planMode) {
      planMode = outcome.effects.planMode === 'enter';
      await persistSessionState();
    }
    return finish(outcome.output, outcome.truncated);
  }

  return {
    specs: () => registry.specs,
    execute,
    planMode: () => planMode,
  };
}
