/**
 * How the execution tools of one boundary reach the machine: one ToolExecutor for every tool of
 * every agent of the boundary, and the workspace as the tools and the model see it. With a sandbox
 * runner (--sandbox-runner) that is the sandbox: one runner for the boundary, started on first use,
 * replaced after it fails and stopped by `close`; paths are guest paths. Without one, the host
 * executor over the boundary's command runner, with host paths. Single-user mode builds one for
 * its boundary; multi-tenant mode one per tenant, closed with the tenant's runtime.
 *
 * The executors are loaded with the first call, like the tools themselves: start-up loads neither.
 */
import type { CommandRunner } from './process-group.ts';
import type { ToolExecutor } from './executor.ts';
import { guestPathOf } from '../sandbox/guest-paths.ts';
import { GUEST_WORKSPACE } from '../sandbox/guest-mounts.ts';

/** The session directory and the workspace roots in the terms of the boundary's executor. */
export interface WorkspaceView {
  cwd: string;
  roots: readonly string[];
}

export interface BoundaryTools {
  /** true: every execution is a request to the sandbox runner, and nothing runs on the host */
  readonly sandboxed: boolean;
  readonly executor: ToolExecutor;
  /** the session directory as the tools and the model see it (a guest path in the sandbox) */
  viewOf(sessionCwd: string): WorkspaceView;
  /** a host path inside the workspace (an attachment's file) as the model sees it */
  modelPath(hostPath: string): string;
  /** stops the runner; called when the boundary closes */
  close(): Promise<void>;
}

export interface BoundaryToolsOptions {
  /** the sandbox runner program, or null to run on the host */
  sandboxRunner: string | null;
  /** canonical; the sandbox shows the first at /workspace */
  workspaceRoots: readonly string[];
  /** host only: how commands run (the confined runner when bubblewrap works) */
  hostRunner: CommandRunner;
  /** host only: the server's own files, which no file tool may touch (config/server-secrets.ts) */
  serverFiles?: readonly string[];
  /** sandbox only: host directory shown as the guest HOME (a tenant's guest state) */
  sandboxHome?: string;
}

export function boundaryTools(options: BoundaryToolsOptions): BoundaryTools {
  if (options.sandboxRunner === null) {
    const { hostRunner, workspaceRoots, serverFiles = [] } = options;
    return {
      sandboxed: false,
      executor: deferredExecutor('host', async () => (await import('./host-executor.ts')).hostExecutor({ runner: hostRunner, serverFiles })),
      viewOf: (sessionCwd) => ({ cwd: sessionCwd, roots: workspaceRoots }),
      modelPath: (hostPath) => hostPath,
      close: async () => {},
    };
  }
  const runner = options.sandboxRunner;
  const workspace = options.workspaceRoots[0];
  const executor = deferredExecutor('sandbox', async () => (await import('./sandbox-executor.ts')).sandboxExecutor({ runner, workspace, home: options.sandboxHome }));
  const modelPath = (hostPath: string) => {
    const guest = guestPathOf(workspace, hostPath);
    // Sessions live inside the boundary's roots, and a sandboxed boundary has exactly one.
    if (guest === null) throw new Error('a session path lies outside the sandbox workspace');
    return guest;
  };
  return {
    sandboxed: true,
    executor,
    viewOf: (sessionCwd) => ({ cwd: modelPath(sessionCwd), roots: [GUEST_WORKSPACE] }),
    modelPath,
    close: () => executor.close(),
  };
}

/** A ToolExecutor whose implementation is loaded (and, for the sandbox, its runner started) on first use. */
function deferredExecutor(kind: ToolExecutor['kind'], load: () => Promise<ToolExecutor>): ToolExecutor {
  let loading: Promise<ToolExecutor> | null = null;
  let closed = false;
  const loaded = () => {
    // After close nothing may start a runner again: it would outlive the boundary.
    if (closed) return Promise.reject(new Error('the tools of this boundary are closed; nothing ran'));
    return (loading ??= load());
  };
  return {
    kind,
    run: async (command) => (await loaded()).run(command),
    readFile: async (path, maxBytes) => (await loaded()).readFile(path, maxBytes),
    writeFile: async (path, content, writeOptions) => (await loaded()).writeFile(path, content, writeOptions),
    removeFile: async (path) => (await loaded()).removeFile(path),
    listDirectory: async (path) => (await loaded()).listDirectory(path),
    search: async (query) => (await loaded()).search(query),
    async close() {
      if (closed) return;
      closed = true;
      if (loading) await (await loading).close();
    },
  };
}
