import { UsageError } from '../../config/flags.ts';
import { Chat, type ChatTerminal } from './chat.ts';
import { connect } from './connect.ts';
import { CHAT_HELP, parseChatOptions } from './options.ts';

/** `agentd chat`: returns the exit code. */
export async function runChat(argv: readonly string[], env: NodeJS.ProcessEnv, cwd: string, terminal: ChatTerminal = { input: process.stdin, output: process.stdout }): Promise<number> {
  let connection;
  try {
    const options = parseChatOptions(argv);
    if (options.help) {
      terminal.output.write(`${CHAT_HELP}\n`);
      return 0;
    }
    connection = await connect(options, env, cwd);
    const { client } = connection;
    const session = options.sessionId
      ? await client.getSession({ path: { id: options.sessionId } })
      : await client.createSession({ body: options.model ? { model: options.model } : {} });
    const chat = new Chat(client, session, terminal);
    const onSignal = () => chat.interrupt();
    process.on('SIGINT', onSignal);
    chat.start(connection.describe);
    await chat.done;
    process.off('SIGINT', onSignal);
    return 0;
  } catch (error) {
    process.stderr.write(`agentd chat: ${(error as Error).message}\n`);
    return error instanceof UsageError ? 2 : 1;
  } finally {
    await connection?.close();
  }
}
