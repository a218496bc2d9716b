/**
 * `shell`: runs a command in the session through the boundary's executor. An argv array is
 * executed directly; a string is run by `bash -c` (not a login shell: profiles are neither read
 * nor trusted, so nothing they export reaches the command and none of their work slows it). In the sandbox, the command runs there with
 * its fixed environment, and a timeout or abort ends its whole PID namespace. On the host, the
 * process group is killed on timeout or abort (see process-group.ts); a call no human decided
 * (unattended) asks its runner for the read-only view, which the confined runner of src/exec
 * enforces and the host runner cannot (the policy then lets only its strict read-only set run
 * unasked); every command gets the allowlisted environment of exec/tool-environment.ts.
 */
import { statSync } from 'node:fs';
import { Type, type Static } from 'typebox';
import { functionTool } from './arguments.ts';
import { literalArgvOf } from '../policy/literal-command.ts';
import { toolEnvironment } from '../../exec/tool-environment.ts';
import type { CommandRunner } from '../../exec/process-group.ts';
import { executorOf } from './executor-of.ts';
import { hostExecutor } from '../../exec/host-executor.ts';
import type { RunOutcome } from '../../exec/executor.ts';
import { resolveToolPath } from './tool-paths.ts';
import { ToolError, type Tool } from './types.ts';

const DEFAULT_SHELL_TIMEOUT_MS = 120_000;
export const MAX_SHELL_TIMEOUT_MS = 600_000;
/** The sandbox's memory limit, as the model is told when it killed something (docs/SANDBOX.md). */
const SANDBOX_MEMORY_GIB = 2;

export interface ShellArgs {
  command: string[] | string;
  timeoutMs: number;
  workdir?: string;
}

export interface ShellToolOptions {
  runner?: CommandRunner;
  /** the environment the allowlist is taken from; defaults to the server's own */
  baseEnvironment?: NodeJS.ProcessEnv;
  /** the runner enforces the requested view (bubblewrap); without it unattended commands never see bash */
  confined?: boolean;
}

const ShellArguments = Type.Object(
  {
    command: Type.Union([Type.Array(Type.String(), { minItems: 1 }), Type.String()], { description: 'argv array (run directly) or a bash command string' }),
    // larger values are capped rather than refused (the description says the maximum)
    timeout_ms: Type.Optional(Type.Integer({ minimum: 1 })),
    workdir: Type.Optional(Type.String({ description: 'directory to run in, relative to the session cwd' })),
  },
  { additionalProperties: false },
);

export function createShellTool(options: ShellToolOptions = {}): Tool<ShellArgs> {
  const own = options.runner ? hostExecutor({ runner: options.runner }) : undefined;
  return functionTool({
    name: 'shell',
    executes: true,
    description:
      'Runs a command in the session working directory and returns its exit code and combined ' +
      'stdout/stderr (long output keeps its head and tail). Pass an argv array to run a program ' +
      'directly, or a string to run it with `bash -c` (pipes, redirection, &&). Commands that are ' +
      'not read-only may need the user\'s approval. Default timeout 120000 ms, at most 600000 ms.',
    arguments: ShellArguments,
    refine: shellArgs,
    plan: (args) => ({ readOnly: false, paths: [args.workdir ?? '.'], command: args.command }),
    async run(args, ctx) {
      const executor = executorOf(ctx, own);
      const cwd = resolveToolPath(ctx, args.workdir ?? '.');
      // The sandbox reports a missing directory itself; asking it first would cost a second start.
      if (executor.kind === 'host' && !isDirectory(cwd)) throw new ToolError(`workdir ${args.workdir ?? '.'} is not an existing directory`);
      // Only a host command can be unconfined; in the sandbox every command is confined alike.
      const unconfined = executor.kind === 'host' && options.confined !== true;
      const argv = argvFor(args.command, ctx.unattended === true && unconfined);
      const outcome = await executor.run({
        argv,
        cwd,
        env: toolEnvironment(options.baseEnvironment ?? process.env),
        view: { writable: ctx.unattended !== true, roots: ctx.roots },
        timeoutMs: args.timeoutMs,
        signal: ctx.signal,
        onOutput: ctx.onOutput,
      });
      return {
        output: describeOutcome(outcome, args.timeoutMs),
        truncated: outcome.outputTruncated,
        ok: outcome.exitCode === 0 && !outcome.timedOut && !outcome.cancelled,
      };
    },
  });
}

/**
 * A string runs in bash, except when the call is unattended and nothing confines it: the policy
 * then let it run only because it is plain words, so it is executed as those words, without a
 * shell that could read more meaning into them.
 */
function argvFor(command: string[] | string, withoutShell: boolean): string[] {
  if (typeof command !== 'string') return command;
  if (!withoutShell) return ['bash', '-c', command];
  const argv = literalArgvOf(command);
  if (argv === null) throw new ToolError('this command needs a shell, which only runs with the user\'s approval here; ask for it or use an argv array');
  return argv;
}

function shellArgs(args: Static<typeof ShellArguments>): ShellArgs {
  const { command, workdir } = args;
  if (typeof command === 'string' ? command.trim() === '' : command[0] === '') throw new ToolError('"command" must not be empty');
  return {
    command,
    timeoutMs: Math.min(args.timeout_ms ?? DEFAULT_SHELL_TIMEOUT_MS, MAX_SHELL_TIMEOUT_MS),
    ...(workdir ? { workdir } : {}),
  };
}

function describeOutcome(outcome: RunOutcome, timeoutMs: number): string {
  const lines: string[] = [];
  if (outcome.startError) lines.push(`Failed to start the command: ${outcome.startError}`);
  else if (outcome.timedOut) lines.push(`Timed out after ${timeoutMs} ms; the command and everything it started were killed.`);
  else if (outcome.cancelled) lines.push('Aborted; the command and everything it started were killed.');
  else if (outcome.exitCode !== null) lines.push(`Exit code: ${outcome.exitCode}`);
  else lines.push(`Killed by signal ${outcome.signal}`);
  if (outcome.oomKilled) lines.push(`The sandbox's memory limit (${SANDBOX_MEMORY_GIB} GiB) killed a process of this command.`);
  if (outcome.strayProcessesStopped) lines.push('Background processes it left running were stopped.');
  lines.push(`Wall time: ${(outcome.durationMs / 1000).toFixed(1)} s`);
  lines.push('Output:');
  lines.push(outcome.output);
  return lines.join('\n');
}

function isDirectory(candidate: string): boolean {
  try {
    return statSync(candidate).isDirectory();
  } catch {
    return false;
  }
}
