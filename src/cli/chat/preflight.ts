import { UsageError } from '../../config/flags.ts';
import { AgentdError, type AgentdClient, type Session } from '../../client/index.ts';

/** Refusals of a session's directory: the chat cannot work there at all. */
export const WORKSPACE_REFUSALS = new Set(['workspace_not_allowed', 'invalid_workspace']);

export interface PreflightTarget {
  client: AgentdClient;
  /** --url, or null for a server started here */
  url: string | null;
  /** a token was given (SERVICE_TOKEN or --token-file) */
  tokenGiven: boolean;
  model: string | null;
  cwd: string;
  /** the directory has been checked against the server's workspace roots already (a server started here) */
  cwdChecked: boolean;
  /** --session was given: that session's directory and model are the ones used */
  resuming: boolean;
}

/**
 * What would otherwise surface only at the first prompt, checked before it: the server answers,
 * takes the token, has models (and the one asked for), and accepts the directory. Each refusal is
 * a UsageError (exit 2) saying what to do. A --url server's workspace roots are not known here, so
 * the directory is checked by making the session now; it is returned, and deleted again by the
 * caller when the chat ends without a turn.
 */
export async function preflight(target: PreflightTarget): Promise<Session | null> {
  const { client } = target;
  const where = target.url ?? 'the server started here';
  let models;
  try {
    models = (await client.listModels()).data;
  } catch (error) {
    throw refusal(error, target);
  }
  if (models.length === 0) {
    throw new UsageError(`${where} has no models (model_catalog_empty): ${target.url ? 'start it' : 'start chat'} with --models-file FILE or an API key in the environment (README, "Configuring models")`);
  }
  if (target.model !== null && !models.some((model) => model.id === target.model)) {
    throw new UsageError(`--model ${target.model} is not in the catalog of ${where}; it has ${models.map((model) => model.id).join(', ')}`);
  }
  if (target.resuming || target.cwdChecked) return null;
  try {
    return await client.createSession({ body: { cwd: target.cwd, ...(target.model ? { model: target.model } : {}) } });
  } catch (error) {
    if (error instanceof AgentdError && WORKSPACE_REFUSALS.has(error.code)) throw workspaceRefusal(target.cwd, error);
    throw refusal(error, target);
  }
}

export function workspaceRefusal(cwd: string, error: AgentdError): UsageError {
  return new UsageError(`the server refuses ${cwd} as the session's directory (${error.code}: ${error.message}); start chat in a directory under the server's workspace roots, or pass --cwd DIR`);
}

/** A failed first request in words that say what to do. */
function refusal(error: unknown, target: PreflightTarget): Error {
  const where = target.url ?? 'the server started here';
  if (error instanceof AgentdError) {
    if (error.code === 'unauthorized') {
      return new UsageError(
        target.tokenGiven
          ? `${where} refuses the token (401 unauthorized): give the token it was started with (SERVICE_TOKEN or --token-file FILE)`
          : `${where} needs a token (401 unauthorized): set SERVICE_TOKEN or pass --token-file FILE`,
      );
    }
    if (!error.hasEnvelope) return new UsageError(`${where} answered HTTP ${error.status} without agentd's error envelope: is --url the address of an agentd?`);
    return new UsageError(`${where}: ${error.code}: ${error.message}`);
  }
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const reason = cause?.code ?? cause?.message ?? (error as Error).message;
  return new UsageError(`cannot reach agentd at ${where} (${reason}): start it with \`agentd serve\`, or pass the address it printed ("agentd listening on …") with --url`);
}
