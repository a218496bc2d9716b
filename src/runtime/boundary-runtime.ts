import type { Boundary } from './boundary.ts';
import { SessionService } from './sessions.ts';

/** The services of one boundary, created once when the boundary becomes active. */
export class BoundaryRuntime {
  readonly sessions: SessionService;

  constructor(readonly boundary: Boundary) {
    this.sessions = new SessionService(boundary, () => false);
  }

  async close(): Promise<void> {}
}
