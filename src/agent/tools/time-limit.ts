/**
 * Every file tool runs against a deadline as well as the turn's abort signal, so that no call can
 * hold a turn (or, through a slow filesystem, the server) for long.
 */
import { ToolError } from './types.ts';

const FILE_TOOL_TIME_LIMIT_MS = 30_000;

export interface TimeLimit {
  /** aborted when the turn is cancelled or the deadline passes */
  signal: AbortSignal;
  /** throws a ToolError naming the deadline once it has passed, or the turn's abort reason */
  check(): void;
}

export function timeLimit(turnSignal: AbortSignal, what: string, limitMs: number = FILE_TOOL_TIME_LIMIT_MS): TimeLimit {
  const deadline = AbortSignal.timeout(limitMs);
  const signal = AbortSignal.any([turnSignal, deadline]);
  return {
    signal,
    check() {
      turnSignal.throwIfAborted();
      if (deadline.aborted) throw timeLimitError(what, limitMs);
    },
  };
}

function timeLimitError(what: string, limitMs: number): ToolError {
  return new ToolError(`${what} did not finish within ${Math.round(limitMs / 1000)} s and was stopped; narrow it down`);
}
