/**
 * `shell`: runs a command in the session. An argv array is executed directly; a string is run by
 * `bash -lc`. The process group is killed on timeout or abort (see process-group.ts). A call no
 * human decided (unattended) asks its runner for the read-only view; the confined runner of
 * src/sandbox enforces it, the host runner cannot (the policy then lets only its strict read-only
 * set run unasked). Every command gets the allowlisted environment of environment.ts.
 */
import { statSync } from 'node:fs';
import { optionalInteger, optionalString, parseJsonArguments, requiredStringArray, type JsonObject } from './arguments.ts';
import { literalArgvOf } from '../policy/literal-command.ts';
import { toolEnvironment } from './environment.ts';
import { createProcessGroupRunner, type CommandResult, type CommandRunner } from './process-group.ts';
import { resolveToolPath } from './tool-paths.ts';
import { ToolError, type Tool } from './types.ts';

export const DEFAULT_SHELL_TIMEOUT_MS = 120_000;
export const MAX_SHELL_TIMEOUT_MS = 600_000;

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

export function createShellTool(options: ShellToolOptions = {}): Tool<ShellArgs> {
  const runner = options.runner ?? createProcessGroupRunner();
  return {
    name: 'shell',
    kind: 'function',
    description:
      'Runs a command in the session working directory and returns its exit code and combined ' +
      'stdout/stderr (long output keeps its head and tail). Pass an argv array to run a program ' +
      'directly, or a string to run it with `bash -lc` (pipes, redirection, &&). Commands that are ' +
      'not read-only may need the user\'s approval. Default timeout 120000 ms, at most 600000 ms.',
    parameters: {
      type: 'object',
      properties: {
        command: {
          description: 'argv array (run directly) or a bash command string',
          anyOf: [{ type: 'array', items: { type: 'string' }, minItems: 1 }, { type: 'string' }],
        },
        timeout_ms: { type: 'integer', minimum: 1, maximum: MAX_SHELL_TIMEOUT_MS },
        workdir: { type: 'string', description: 'directory to run in, relative to the session cwd' },
      },
      required: ['command'],
      additionalProperties: false,
    },
    parse: (input) => parseShellArgs(parseJsonArguments(input, ['command', 'timeout_ms', 'workdir'])),
    plan: (args) => ({ readOnly: false, paths: [args.workdir ?? '.'], command: args.command }),
    async run(args, ctx) {
      const cwd = resolveToolPath(ctx, args.workdir ?? '.');
      if (!isDirectory(cwd)) throw new ToolError(`workdir ${args.workdir ?? '.'} is not an existing directory`);
      const argv = argvFor(args.command, ctx.unattended === true && options.confined !== true);
      const result = await runner({
        argv,
        cwd,
        env: toolEnvironment(options.baseEnvironment ?? process.env),
        view: { writable: ctx.unattended !== true, roots: ctx.roots },
        timeoutMs: args.timeoutMs,
        signal: ctx.signal,
        onOutput: ctx.onOutput,
      });
      return {
        output: describeResult(result, args.timeoutMs),
        truncated: result.truncated,
        ok: result.exitCode === 0 && !result.timedOut && !result.aborted,
      };
    },
  };
}

/**
 * A string runs in bash, except when the call is unattended and nothing confines it: the policy
 * then let it run only because it is plain words, so it is executed as those words, without a
 * shell that could read more meaning into them.
 */
function argvFor(command: string[] | string, withoutShell: boolean): string[] {
  if (typeof command !== 'string') return command;
  if (!withoutShell) return ['bash', '-lc', command];
  const argv = literalArgvOf(command);
  if (argv === null) throw new ToolError('this command needs a shell, which only runs with the user\'s approval here; ask for it or use an argv array');
  return argv;
}

function parseShellArgs(args: JsonObject): ShellArgs {
  const command = typeof args.command === 'string' ? args.command : requiredStringArray(args, 'command');
  if (typeof command === 'string' ? command.trim() === '' : command.length === 0 || command[0] === '') {
    throw new ToolError('"command" must not be empty');
  }
  const timeoutMs = optionalInteger(args, 'timeout_ms', 1, Number.MAX_SAFE_INTEGER) ?? DEFAULT_SHELL_TIMEOUT_MS;
  const workdir = optionalString(args, 'workdir');
  return {
    command,
    timeoutMs: Math.min(timeoutMs, MAX_SHELL_TIMEOUT_MS),
    ...(workdir ? { workdir } : {}),
  };
}

function describeResult(result: CommandResult, timeoutMs: number): string {
  const lines: string[] = [];
  if (result.spawnError) lines.push(`Failed to start the command: ${result.spawnError}`);
  else if (result.timedOut) lines.push(`Timed out after ${timeoutMs} ms; the command and everything it started were killed.`);
  else if (result.aborted) lines.push('Aborted; the command and everything it started were killed.');
  else if (result.exitCode !== null) lines.push(`Exit code: ${result.exitCode}`);
  else lines.push(`Killed by signal ${result.signal}`);
  if (result.strayProcessesStopped) lines.push('Background processes it left running were stopped.');
  lines.push(`Wall time: ${(result.durationMs / 1000).toFixed(1)} s`);
  lines.push('Output:');
  lines.push(result.output);
  return lines.join('\n');
}

function isDirectory(candidate: string): boolean {
  try {
    return statSync(candidate).isDirectory();
  } catch {
    return false;
  }
}
