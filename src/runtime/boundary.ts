import type { RevertSpace } from '../workspace/revert-reservation.ts';
import type { Db } from '../store/database.ts';
import type { Catalog } from '../config/models-file.ts';
import type { Limits } from '../config/config.ts';
import type { BoundaryTools } from '../exec/boundary-tools.ts';
import type { ClusterDuties } from './cluster-supervisor.ts';
import type { ClusterMembership } from './turn/turn-leases.ts';

/**
 * An access boundary: everything a request is admitted into. In single-user mode there is exactly
 * one; in multi-tenant mode one per tenant. Nothing below the HTTP layer reads a global.
 */
export interface Boundary {
  id: string;
  db: Db;
  /**
   * No other agentd was on the database when this process claimed it: a turn found queued,
   * running or waiting was left by a dead process. False for an instance joining a live cluster.
   */
  aloneOnDatabase: boolean;
  /** --cluster: this instance holds its turns under leases (turn/turn-leases.ts); null without */
  cluster: ClusterMembership | null;
  /**
   * --cluster: the instance's supervisor for this boundary (cluster-supervisor.ts): the one loop that
   * runs its background work, and the doorbell of its database
   */
  duties?: ClusterDuties | null;
  /** canonical workspace roots; the first is the default cwd */
  workspaceRoots: string[];
  catalog: Catalog;
  limits: Limits;
  yolo: boolean;
  /** AGENTS.md files join the model's instructions (off with --no-project-instructions) */
  projectInstructions: boolean;
  stateDir: string;
  /** how every execution tool of the boundary runs: the sandbox, or the host (exec/boundary-tools.ts) */
  tools: BoundaryTools;
  /** a tenant with a disk quota: where its revert content is counted (workspace/revert-reservation.ts) */
  revertSpace?: RevertSpace | null;
}

export const DEFAULT_BOUNDARY_ID = 'default';

/** The tenant label of a boundary's turn and token metrics: none in single-user mode. */
export function metricsTenantOf(boundaryId: string): string | undefined {
  return boundaryId === DEFAULT_BOUNDARY_ID ? undefined : boundaryId;
}
