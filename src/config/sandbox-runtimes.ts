/** What may confine a sandbox runner's commands (`--sandbox-runtime`, docs/SANDBOX.md "Runtimes"); the runner reads the same list. */
export const SANDBOX_RUNTIMES = ['bubblewrap', 'gvisor'] as const;
export type SandboxRuntimeName = (typeof SANDBOX_RUNTIMES)[number];
