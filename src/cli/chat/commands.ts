import type { AgentdClient, Session } from '../../client/index.ts';
import type { ChatOutput } from './render.ts';

/** What a slash command may ask of the chat. */
export interface CommandContext {
  client: AgentdClient;
  output: ChatOutput;
  session: Session;
  switchTo(session: Session): void;
  submit(input: string): Promise<void>;
  quit(): void;
}

export const COMMANDS_HELP = '/sessions · /resume ID · /model [ID] · /compact · /clear · /quit';

/**
 * Runs `/name args`. /compact and /clear are turns the server understands; /model with an id
 * starts a new session on that model in the same directory, since a session keeps its model.
 */
export async function runCommand(line: string, context: CommandContext): Promise<void> {
  const [name, ...rest] = line.trim().split(/\s+/);
  const argument = rest.join(' ');
  const { client, output } = context;
  switch (name) {
    case '/compact':
    case '/clear':
      return context.submit(name);
    case '/sessions': {
      const page = await client.listSessions({ query: { limit: 20 } });
      if (page.data.length === 0) output.notice('no sessions');
      for (const session of page.data) {
        const marker = session.id === context.session.id ? '*' : ' ';
        output.line(`${marker} ${session.id}  ${session.title || '(untitled)'}  ${session.model}  ${session.updatedAt}`);
      }
      return;
    }
    case '/resume': {
      if (!argument) return output.error('usage: /resume SESSION_ID');
      const session = await client.getSession({ path: { id: argument } });
      context.switchTo(session);
      const history = await client.getHistory({ path: { id: session.id }, query: { limit: 1 } });
      const last = history.data.at(-1)?.turn;
      output.notice(`resumed ${session.title || session.id} (${history.total} turns)`);
      if (last?.assistantText) output.line(last.assistantText);
      return;
    }
    case '/model': {
      const models = await client.listModels();
      if (!argument) {
        for (const model of models.data) output.line(`${model.id === context.session.model ? '*' : ' '} ${model.id}  ${model.label ?? model.transportModel}`);
        return output.notice('/model ID starts a new session with that model');
      }
      const session = await client.createSession({ body: { model: argument, cwd: context.session.cwd } });
      context.switchTo(session);
      return output.notice(`new session ${session.id} on ${session.model}`);
    }
    case '/quit':
    case '/exit':
      return context.quit();
    case '/help':
      return output.notice(COMMANDS_HELP);
    default:
      return output.error(`unknown command ${name} (${COMMANDS_HELP})`);
  }
}
