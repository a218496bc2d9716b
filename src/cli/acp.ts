import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { ndJsonStream } from '@agentclientprotocol/sdk';
import { UsageError } from '../config/flags.ts';
import { acpAgent } from '../protocols/acp/agent.ts';
import { VERSION } from '../version.ts';
import { connect } from './chat/connect.ts';
import { parseChatOptions } from './chat/options.ts';

const ACP_HELP = `Usage: agentd acp [options] [agentd serve options]

An Agent Client Protocol (v1) agent on standard input and output, for editors that run agents
(Zed, JetBrains, Neovim, Emacs; docs/ACP.md). With --url it is a client of a running agentd,
whose sessions and turns outlive the editor; without, it starts agentd in this process (any
\`agentd serve\` option applies; the port is a free loopback one). Logs go to standard error.

Options:
  --url URL          a running agentd (token from SERVICE_TOKEN or --token-file)
  --token-file PATH  bearer token file (owner-only)
  --cwd DIR          started here: the workspace root, unless --workspace-root (default: this directory)
  --help             show this help`;

/** `agentd acp`: serves ACP until the editor closes standard input; returns the exit code. */
export async function runAcp(argv: readonly string[], env: NodeJS.ProcessEnv, cwd: string): Promise<number> {
  // Standard output carries protocol messages only: whatever would print there goes to stderr.
  console.log = console.error;
  console.info = console.error;
  let connection;
  try {
    const options = parseChatOptions(argv);
    if (options.help) {
      process.stderr.write(`${ACP_HELP}\n`);
      return 0;
    }
    const chatOnly = [options.sessionId !== null && '--session', options.model !== null && '--model', options.json && '--json', options.outputSchema !== null && '--output-schema', options.autoAnswer === 'deny' && '--deny'].filter(Boolean);
    if (chatOnly.length > 0) throw new UsageError(`${chatOnly.join(', ')}: chat options; an editor picks sessions and models and answers approvals over ACP`);
    // --yolo is the server's (auto-approve), which chat's parser took as its own
    if (options.autoAnswer === 'allow_once') {
      if (options.url !== null) throw new UsageError('--yolo: server options only apply without --url');
      options.serveArgs.push('--yolo');
    }
    connection = await connect(options, env, cwd, directoryOf(options.cwd, cwd));
    const app = acpAgent({ client: connection.client, version: VERSION, complain: (message, error) => process.stderr.write(`agentd acp: ${message}: ${(error as Error)?.message ?? String(error)}\n`) });
    const stream = ndJsonStream(Writable.toWeb(process.stdout) as WritableStream<Uint8Array>, Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>);
    await app.connect(stream).closed;
    return 0;
  } catch (error) {
    process.stderr.write(`agentd acp: ${(error as Error).message}\n`);
    return error instanceof UsageError ? 2 : 1;
  } finally {
    await connection?.close();
  }
}

function directoryOf(option: string | null, cwd: string): string {
  try {
    return realpathSync(resolve(cwd, option ?? '.'));
  } catch {
    throw new UsageError(`--cwd: no such directory: ${resolve(cwd, option ?? '.')}`);
  }
}
