/**
 * Where a revert's writes happen: where the boundary's tools write. On the host, revertFiles runs
 * in this process on the host path; in a sandbox, its source runs in the guest's node through the
 * executor, on the guest path, with the plan on its standard input, so every name is resolved in
 * the guest's mount namespace like any file tool's (CONTRACT.md §17).
 */
import { revertFiles, type RevertFilesInput, type RevertFilesOutcome } from '../workspace/revert-files.ts';
import type { BoundaryTools } from './boundary-tools.ts';
import { ExecutorError } from './executor.ts';
import { MAX_LINE_BYTES } from '../sandbox/protocol-bounds.ts';

/** The plan and the request around it must fit one protocol line. */
const MAX_SANDBOX_PLAN_BYTES = MAX_LINE_BYTES - 256 * 1024;
const REVERT_TIMEOUT_MS = 120_000;

export class RevertTooLarge extends Error {}

export async function revertThroughExecutor(tools: BoundaryTools, sessionCwd: string, plan: Omit<RevertFilesInput, 'root'>): Promise<RevertFilesOutcome> {
  if (!tools.sandboxed) return revertFiles({ ...plan, root: sessionCwd });
  const input = JSON.stringify({ ...plan, root: tools.viewOf(sessionCwd).cwd });
  const script = `${MAIN}\n(${revertFiles.toString()})`;
  if (Buffer.byteLength(input) + Buffer.byteLength(script) > MAX_SANDBOX_PLAN_BYTES) throw new RevertTooLarge('the turn\'s earlier contents are too large to send to the sandbox in one request');
  const outcome = await tools.executor.run({
    argv: ['node', '-e', script],
    cwd: tools.viewOf(sessionCwd).cwd,
    stdin: input,
    timeoutMs: REVERT_TIMEOUT_MS,
    signal: new AbortController().signal,
    onOutput: () => {},
  });
  const answer = outcome.output.trim().split('\n').at(-1) ?? '';
  if (outcome.exitCode !== 0 || !answer.startsWith('{')) throw new ExecutorError('operation', `the revert did not run in the sandbox (exit ${outcome.exitCode})`);
  return JSON.parse(answer) as RevertFilesOutcome;
}

/**
 * Reads the plan from standard input, runs the function the script ends with, prints its answer.
 * `__name` is the helper a transpiler that keeps function names (tsx, esbuild's keepNames) calls
 * inside the function's source.
 */
const MAIN = `const __name = (target) => target;
const run = () => process.stdout.write(JSON.stringify(main(JSON.parse(require('node:fs').readFileSync(0, 'utf8')))) + '\\n');
setImmediate(run);
const main =`;
