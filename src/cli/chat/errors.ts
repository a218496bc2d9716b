import { AgentdError } from '../../client/index.ts';

/** An error in the chat's words: the server's code and message, or what went wrong on the way. */
export function describeError(error: unknown): string {
  if (error instanceof AgentdError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
