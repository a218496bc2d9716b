/** Every error code of the HTTP contract with its status (CONTRACT.md §3). Add a code only here. */
export const ERROR_STATUS = {
  invalid_json: 400,
  empty_patch: 400,
  invalid_archive_filter: 400,
  invalid_limit: 400,
  invalid_cursor: 400,
  invalid_query: 400,
  invalid_last_event_id: 400,
  malformed_request: 400,
  unauthorized: 401,
  invalid_host: 403,
  origin_not_allowed: 403,
  workspace_not_allowed: 403,
  route_not_found: 404,
  session_not_found: 404,
  turn_not_found: 404,
  request_not_found: 404,
  connection_not_found: 404,
  request_timeout: 408,
  session_busy: 409,
  idempotency_conflict: 409,
  turn_not_terminal: 409,
  turn_agents_unavailable: 409,
  revert_conflict: 409,
  revert_unavailable: 409,
  request_already_resolved: 409,
  request_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  non_atomic_patch: 422,
  empty_input: 422,
  invalid_workspace: 422,
  model_not_available: 422,
  invalid_effort: 422,
  unsupported_fork_shape: 422,
  fork_point_out_of_range: 422,
  repository_with_cwd: 422,
  invalid_repository: 422,
  invalid_decision: 422,
  invalid_attachment: 422,
  invalid_output_schema: 422,
  event_subscriber_limit: 429,
  tenant_event_subscriber_limit: 429,
  too_many_waits: 429,
  request_header_fields_too_large: 431,
  internal_error: 500,
  store_unavailable: 503,
  model_catalog_empty: 503,
  server_stopping: 503,
  tenant_runtime_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** An error that becomes the contract's envelope. Messages never carry tokens, prompts or tool output. */
export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.status = ERROR_STATUS[code];
  }
}
