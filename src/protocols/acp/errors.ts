import { RequestError } from '@agentclientprotocol/sdk';
import { AgentdError } from '../../client/index.ts';
import { UnsupportedContent } from './prompt-input.ts';

/**
 * agentd's refusal as a JSON-RPC error the editor can show: a missing session is ACP's
 * "resource not found"; any other refusal (a cwd outside the workspace roots, a prompt over the
 * limits of SPEC.md §8, a busy session) is invalid params, with agentd's code and message; the
 * server unreachable or failing is an internal error that says so.
 */
export function acpErrorOf(error: unknown, sessionId?: string): RequestError {
  if (error instanceof RequestError) return error;
  if (error instanceof UnsupportedContent) return RequestError.invalidParams({ code: 'unsupported_content' }, error.message);
  if (error instanceof AgentdError) {
    if (error.status === 404 && sessionId !== undefined && error.code === 'session_not_found') return RequestError.sessionNotFound(sessionId);
    const data = { code: error.code, status: error.status, requestId: error.requestId };
    if (error.status >= 400 && error.status < 500 && error.hasEnvelope) return RequestError.invalidParams(data, `${error.code}: ${error.message}`);
    return RequestError.internalError(data, `agentd answered ${error.status}: ${error.message}`);
  }
  return RequestError.internalError(undefined, `agentd could not be reached: ${(error as Error)?.message ?? String(error)}`);
}
