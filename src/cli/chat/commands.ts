import type { AgentdClient, Session } from '../../client/index.ts';
import type { ChatOutput } from './render.ts';
import { matchingPrefix, recentSessions, sessionRow } from './sessions.ts';

/** What a slash command may ask of the chat. */
export interface CommandContext {
  client: AgentdClient;
  output: ChatOutput;
  /** null until the first prompt creates it */
  session: Session | null;
  /** the directory new sessions are made in */
  cwd: string;
  /** whether keys can drive a picker (a terminal) */
  interactive: boolean;
  /** makes `session` the chat's session and shows its recent turns */
  switchTo(session: Session): Promise<void>;
  /** the chat's session changed (its model): the same conversation, nothing to show again */
  update(session: Session): void;
  /** lets the user choose among `sessions` (a terminal only); null when they left without choosing */
  pick(sessions: Session[], filter: string): Promise<Session | null>;
  submit(input: string): Promise<void>;
  quit(): void;
}

export const COMMANDS_HELP = '/sessions · /resume [ID or prefix] · /model [ID] · /plan · /effort LEVEL · /budget TOKENS · /undo · /steer WORDS · /compact · /clear · /quit';

/** Every command, for Tab completion. */
const COMMAND_NAMES = ['/budget', '/clear', '/compact', '/effort', '/exit', '/help', '/model', '/plan', '/quit', '/resume', '/sessions', '/steer', '/undo'];

/** Readline's completer: a line starting with `/` completes to the commands it begins. */
export function completeCommand(line: string): [string[], string] {
  if (!line.startsWith('/') || /\s/.test(line)) return [[], line];
  return [COMMAND_NAMES.filter((name) => name.startsWith(line)), line];
}

/** `/steer words` → the words; null for any other line. */
export function steerWords(line: string): string | null {
  const match = /^\/steer(?:\s+([\s\S]*))?$/.exec(line.trim());
  return match ? (match[1] ?? '').trim() : null;
}

/**
 * Runs `/name args`. /compact and /clear are turns the server understands; /model with an id
 * moves the session to that model (PATCH, CONTRACT.md §19): the conversation goes on, the next
 * turn goes to the new model with the whole history. Before the first prompt there is no session
 * yet: one is made on that model.
 */
export async function runCommand(line: string, context: CommandContext): Promise<void> {
  const [name, ...rest] = line.trim().split(/\s+/);
  const argument = rest.join(' ');
  const { client, output } = context;
  switch (name) {
    case '/compact':
    case '/clear':
      return context.submit(name);
    case '/steer': {
      // typed while a turn runs, it is steered at once (Chat.steer); with none running it is a prompt
      const words = steerWords(line);
      return words ? context.submit(words) : output.error('usage: /steer WORDS (while a turn runs: the model gets them before its next request)');
    }
    case '/sessions': {
      const page = await client.listSessions({ query: { limit: 20 } });
      if (page.data.length === 0) output.notice('no sessions');
      for (const session of page.data) output.line(`${session.id === context.session?.id ? '*' : ' '} ${sessionRow(session)}`);
      return;
    }
    case '/resume':
      return resume(argument, context);
    case '/model': {
      const models = await client.listModels();
      const current = context.session?.model;
      if (!argument) {
        for (const model of models.data) output.line(`${model.id === current ? '*' : ' '} ${model.id}  ${model.label ?? model.transportModel}`);
        return output.notice('/model ID moves this conversation to that model');
      }
      if (context.session) {
        const moved = await client.patchSession({ path: { id: context.session.id }, body: { model: argument } });
        context.update(moved);
        return output.notice(`the session now talks to ${moved.model} (${moved.dialect}); its history goes along`);
      }
      const session = await client.createSession({ body: { model: argument, cwd: context.cwd } });
      await context.switchTo(session);
      return output.notice(`new session ${session.id} on ${session.model}`);
    }
    case '/plan':
    case '/effort':
    case '/budget':
    case '/undo':
      return sessionCommand(name, argument, context);
    case '/quit':
    case '/exit':
      return context.quit();
    case '/help':
      return output.notice(COMMANDS_HELP);
    default:
      return output.error(`unknown command ${name} (${COMMANDS_HELP})`);
  }
}

/** `/resume`: a picker on a terminal; an id or a prefix picks directly when only one matches. */
async function resume(argument: string, context: CommandContext): Promise<void> {
  const sessions = (await recentSessions(context.client)).filter((session) => session.id !== context.session?.id);
  const matches = argument ? matchingPrefix(sessions, argument) : sessions;
  if (matches.length === 1 && argument) return context.switchTo(matches[0]);
  if (matches.length === 0) return context.output.error(argument ? `no session starts with ${argument}` : 'no other session to resume');
  if (!context.interactive) {
    for (const session of matches.slice(0, 20)) context.output.line(`  ${sessionRow(session)}`);
    return context.output.notice(argument ? `${matches.length} sessions start with ${argument}: give more of the id` : 'usage: /resume ID (or the start of one)');
  }
  const picked = await context.pick(sessions, argument);
  if (picked) return context.switchTo(picked);
}

type PatchBody = NonNullable<Parameters<AgentdClient['patchSession']>[0]['body']>;

/**
 * Commands that change the session (PATCH, CONTRACT.md §19) or its files (revert, §20): /plan
 * toggles plan mode, /effort and /budget set what the next turn may use, /undo takes back the last
 * turn's file changes.
 */
async function sessionCommand(name: string, argument: string, context: CommandContext): Promise<void> {
  const { client, output, session } = context;
  if (!session) return output.error(`${name}: no session yet; send a prompt first`);
  const patch = async (body: PatchBody) => {
    const changed = await client.patchSession({ path: { id: session.id }, body });
    context.update(changed);
    return changed;
  };
  switch (name) {
    case '/plan': {
      const changed = await patch({ planMode: !session.planMode });
      return output.notice(changed.planMode ? 'plan mode: the model reads and plans; nothing changes until you approve its plan (/plan again leaves it)' : 'plan mode left: the model may change files again');
    }
    case '/effort': {
      if (!argument) return output.notice(`effort ${session.effort ?? 'the model\'s default'}; /effort LEVEL (none, low, medium, high, xhigh, max: what the model accepts)`);
      const changed = await patch({ effort: argument as PatchBody['effort'] });
      return output.notice(`effort ${changed.effort}`);
    }
    case '/budget': {
      const tokens = Number(argument);
      if (!/^\d+$/.test(argument) || !Number.isSafeInteger(tokens)) return output.error('usage: /budget TOKENS (the session\'s token limit; a turn reaching it asks you to raise it or stop)');
      const changed = await patch({ budget: { tokens } });
      return output.notice(`budget ${changed.budget?.tokens ?? tokens} tokens`);
    }
    case '/undo': {
      const [last] = (await client.listTurns({ query: { sessionId: session.id } })).data;
      if (!last) return output.error('/undo: the session has no turn yet');
      const { reverted } = await client.revertTurn({ path: { id: last.id } });
      if (reverted.length === 0) return output.notice(`the last turn changed no file`);
      output.notice(`reverted the last turn's changes to ${reverted.length} file${reverted.length === 1 ? '' : 's'}:`);
      for (const path of reverted) output.line(`  ${path}`);
      return;
    }
  }
}
