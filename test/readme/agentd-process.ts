/** `agentd serve` as a real child process from bin/agentd.js (which runs dist/: build first). */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';

const BIN = new URL('../../bin/agentd.js', import.meta.url).pathname;

export interface AgentdProcess {
  child: ChildProcess;
  url: string;
  /** everything printed on stdout so far: the pino JSON lines and the "listening on" line */
  stdout(): string;
  stop(): Promise<void>;
}

/**
 * Starts agentd with only PATH and HOME from this environment plus `env`, and waits until it
 * listens. `program` is the checkout's bin/agentd.js unless another is given (an installed one).
 */
export async function startAgentd(args: string[], env: NodeJS.ProcessEnv = {}, cwd?: string, program = BIN): Promise<AgentdProcess> {
  const child = spawn(process.execPath, [program, 'serve', ...args], {
    cwd,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let errors = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (errors += chunk));
  const deadline = Date.now() + 20_000;
  while (!/listening on (http:\/\/\S+)/.test(output)) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      throw new Error(`agentd did not start: ${output}${errors}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return {
    child,
    url: output.match(/listening on (http:\/\/\S+)/)![1],
    stdout: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The pino lines of a process's stdout, parsed. */
export function logLines(stdout: string): Array<{ level: number; msg: string } & Record<string, unknown>> {
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));
}

/**
 * Runs a shell script that starts agentd (a README block, as written), in a process group of its
 * own, and waits until agentd listens. stop() sends SIGTERM to the group (bash and agentd, as a
 * Ctrl-C in the terminal would) and waits until agentd itself, named by its log lines' pid, is gone.
 */
export async function startAgentdFromShell(script: string, env: NodeJS.ProcessEnv, cwd: string): Promise<AgentdProcess> {
  const child = spawn('bash', ['-c', script], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let errors = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (errors += chunk));
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // the group is gone
    }
  };
  const deadline = Date.now() + 30_000;
  while (!/listening on (http:\/\/\S+)/.test(output)) {
    if (Date.now() > deadline || child.exitCode !== null) {
      killGroup('SIGKILL');
      throw new Error(`agentd did not start (${script}):\n${output}${errors}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const agentdPid = logLines(output)[0]?.pid as number;
  const running = () => {
    try {
      process.kill(agentdPid, 0);
      return true;
    } catch {
      return false;
    }
  };
  return {
    child,
    url: output.match(/listening on (http:\/\/\S+)/)![1],
    stdout: () => output,
    async stop() {
      killGroup('SIGTERM');
      const stopBy = Date.now() + 15_000;
      while (running() && Date.now() < stopBy) await new Promise((resolve) => setTimeout(resolve, 20));
      if (running()) killGroup('SIGKILL');
    },
  };
}
