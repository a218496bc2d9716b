import { flushCompileCache } from 'node:module';
import { loadConfig, UsageError } from '../config/config.ts';
import { formatServeHelp } from '../config/flags.ts';
import { ModelsFileError } from '../config/models-file.ts';
import { PathError } from '../workspace/paths.ts';
import { DatabaseInUse } from '../store/database-claim.ts';
import { tuneHeapForServer } from './heap-tuning.ts';
import { collectWhenIdle } from './idle-collection.ts';
import type { ReadyLine } from '../sandbox/protocol.ts';

const TOP_HELP = `Usage: agentd <command> [options]

Commands:
  serve       start the HTTP server (agentd serve --help lists its options)
  chat        a terminal client, of a running server or of one started for this directory
  acp         an Agent Client Protocol agent on stdin/stdout, for editors (docs/ACP.md)

Options:
  --help      show this help
  --version   print the version`;

export async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    console.log(TOP_HELP);
    return;
  }
  if (command === '--version') {
    const { VERSION } = await import('../version.ts');
    console.log(VERSION);
    return;
  }
  if (command === 'chat') {
    const { runChat } = await import('./chat/index.ts');
    process.exitCode = await runChat(rest, process.env, process.cwd());
    return;
  }
  if (command === 'acp') {
    const { runAcp } = await import('./acp.ts');
    process.exitCode = await runAcp(rest, process.env, process.cwd());
    return;
  }
  if (command !== 'serve') return usageFailure(`unknown command: ${command} (try agentd --help)`);
  if (rest.includes('--help') || rest.includes('-h')) {
    console.log(formatServeHelp());
    return;
  }

  let server;
  let config;
  try {
    config = await loadConfig(rest, process.env, process.cwd());
    delete process.env.SERVICE_TOKEN;
    // chosen once: every runner this process starts (the probe's, each boundary's) inherits it (docs/SANDBOX.md, "Runtimes")
    if (config.sandboxRunner) process.env.AGENTD_SANDBOX_RUNTIME = config.sandboxRuntime;
    const sandbox = config.sandboxRunner ? await probeSandboxRunner(config.sandboxRunner, config.sandboxRuntime) : null;
    const { startServer } = await import('../server.ts');
    server = await startServer(config, process.env, undefined, {
      // another agentd holds the database now: whatever this one would still do, it must not
      onStandDown: (_error, closed) => void closed.finally(() => process.exit(1)),
    });
    if (sandbox) server.app.log.info({ sandboxRuntime: sandbox.runtime ?? 'bubblewrap', cgroupVersion: sandbox.cgroupVersion, limits: sandbox.limits }, 'sandbox runner ready');
  } catch (error) {
    if (error instanceof UsageError || error instanceof ModelsFileError || error instanceof PathError || error instanceof DatabaseInUse) {
      return usageFailure(error.message);
    }
    const inUse = portInUse(error, config?.metricsPort ?? null);
    if (inUse) return usageFailure(inUse);
    console.error(`agentd: ${(error as Error).message}`);
    process.exitCode = 1;
    return;
  }

  // After start-up, which runs faster with V8's default sizing; the idle collection then shrinks
  // what start-up grew.
  tuneHeapForServer();
  const idleCollection = collectWhenIdle(() => server.activity(), server.app.log);
  const stop = async (signal: string) => {
    server.app.log.info({ signal }, 'stopping');
    idleCollection.stop();
    await server.close();
    process.exit(0);
  };
  // before the line a supervisor waits for: a SIGTERM sent the moment it reads it stops gracefully
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  console.log(`agentd listening on ${server.url}`);
  if (server.metricsUrl) console.log(`agentd metrics at ${server.metricsUrl}`);
  // the compile cache (bin/compile-cache.js) of what start-up loaded, kept even if this process is killed
  setImmediate(flushCompileCache);
}

/** The probe, and the sandbox client it drives, load only with --sandbox-runner; a refusal is a usage error. */
async function probeSandboxRunner(runner: string, runtime: string): Promise<ReadyLine> {
  const probe = await import('../exec/runner-probe.ts');
  try {
    return await probe.probeSandboxRunner(runner, runtime);
  } catch (error) {
    throw error instanceof probe.SandboxRunnerRefused ? new UsageError(error.message) : error;
  }
}

/** Node's EADDRINUSE, in agentd's words: which port, and the flag that picks another. */
function portInUse(error: unknown, metricsPort: number | null): string | null {
  const failure = error as NodeJS.ErrnoException & { port?: number };
  if (failure?.code !== 'EADDRINUSE') return null;
  const flag = failure.port !== undefined && failure.port === metricsPort ? '--metrics-port' : '--port';
  return `port ${failure.port ?? '?'} is in use; pick another with ${flag} (or stop what listens there)`;
}

function usageFailure(message: string): void {
  console.error(`agentd: ${message}`);
  process.exitCode = 2;
}
