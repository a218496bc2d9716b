import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const REPOSITORY = fileURLToPath(new URL('../..', import.meta.url));

/** `agentd chat ARGS` from source: the real CLI entry (src/cli/main.ts) through tsx. */
export function chatCommand(args: string[]): string[] {
  const script = `import(${JSON.stringify(`${REPOSITORY}src/cli/main.ts`)}).then((cli) => cli.main(['chat', ...JSON.parse(process.argv[1])]))`;
  return [process.execPath, '--import', `${REPOSITORY}node_modules/tsx/dist/loader.mjs`, '--input-type=module', '-e', script, JSON.stringify(args)];
}

/** `agentd chat ARGS` with piped stdin (`input`, then its end) and stdout; resolves at exit (killed after 120 s). */
export function runPipedChat(args: string[], cwd: string, input: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [command, ...rest] = chatCommand(args);
  const child = spawn(command, rest, { cwd, env: { PATH: process.env.PATH, HOME: cwd }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  child.stdin.end(input);
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  return new Promise((resolve) => child.on('exit', (code) => (clearTimeout(timer), resolve({ code, stdout, stderr }))));
}
