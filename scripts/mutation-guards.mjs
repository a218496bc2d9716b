// The guard modules under mutation testing, each with the test files that must notice a loosened guard.
// Unit-level edge files first: with forceBail a mutant's run stops at the first failing file.
// timeoutMS: how long past the dry run's time a mutant may run before it counts as hanging (default 60 s).
export const GUARDS = {
  'dangerous-commands': {
    timeoutMS: 15_000,
    modules: ['src/agent/policy/dangerous-commands.ts'],
    tests: ['test/edges/dangerous-commands.test.ts', 'test/agent/policy/decide.test.ts'],
  },
  access: {
    modules: ['src/http/access.ts'],
    tests: ['test/edges/access-checks.test.ts', 'test/edges/access.test.ts'],
  },
  'token-lookup': {
    modules: ['src/tenancy/token-lookup.ts'],
    tests: ['test/edges/tenant-lookup.test.ts'],
  },
  'text-codec': {
    modules: ['src/store/text-codec.ts'],
    tests: ['test/store/text-codec.test.ts', 'test/edges/text-codec.test.ts'],
  },
  attachments: {
    modules: ['src/workspace/attachments.ts:1-90'],
    tests: ['test/edges/attachments.test.ts'],
  },
  'request-limits': {
    modules: ['src/http/request-limits.ts'],
    tests: ['test/edges/request-head-limits.test.ts', 'test/http/edges.test.ts', 'test/e2e/edges-http.test.ts'],
  },
  'read-only-commands': {
    timeoutMS: 15_000,
    modules: ['src/agent/policy/read-only-commands.ts', 'src/agent/policy/read-only-programs.ts'],
    tests: ['test/edges/read-only-table.test.ts', 'test/edges/read-only-and-plan-mode.test.ts', 'test/agent/policy/command-analysis.test.ts'],
  },
  'policy-decide': {
    timeoutMS: 15_000,
    modules: ['src/agent/policy/decide.ts', 'src/agent/tools/plan-mode.ts:71-84'],
    tests: ['test/agent/policy/decide.test.ts', 'test/edges/read-only-and-plan-mode.test.ts', 'test/agent/tools/plan-tools.test.ts', 'test/agent/policy/permission-rules.test.ts', 'test/agent/policy/sandboxed.test.ts'],
  },
  'workspace-paths': {
    timeoutMS: 15_000,
    modules: ['src/workspace/paths.ts'],
    tests: ['test/edges/workspace-containment.test.ts', 'test/workspace/paths.test.ts'],
  },
  'no-follow': {
    timeoutMS: 15_000,
    modules: ['src/workspace/no-follow.ts'],
    tests: ['test/edges/no-follow.test.ts', 'test/edges/no-follow-without-proc.test.ts', 'test/workspace/no-follow.test.ts'],
  },
  'egress-ranges': {
    timeoutMS: 15_000,
    modules: ['src/workspace/refused-destinations.ts', 'src/sandbox/runner/network.ts:21-43'],
    tests: ['test/workspace/repository-destination.test.ts', 'test/edges/egress-ranges.test.ts'],
  },
  'sandbox-limits': {
    timeoutMS: 15_000,
    modules: ['src/sandbox/cgroups/limits.ts'],
    tests: ['test/sandbox/cgroup-limits.test.ts'],
  },
  projection: {
    timeoutMS: 15_000,
    modules: ['src/domain/projection-budget.ts', 'src/domain/projection-json.ts', 'src/domain/projection.ts'],
    tests: [
      'test/edges/projection-edges.test.ts',
      'test/domain/projection-budget.test.ts',
      'test/domain/projection-redaction.test.ts',
      'test/domain/projection-agents.test.ts',
      'test/domain/projection-items.test.ts',
      'test/domain/projection-tags.test.ts',
      'test/domain/projection-adversarial.test.ts',
    ],
  },
  // The guards added by issues 34 to 38, and the URL reading of issue 39 (docs/RELIABILITY.md §9).
  // Stryker's sandbox has no dist/, so no test file that runs the built binary is in these lists.
  'turn-budget': {
    timeoutMS: 15_000,
    modules: ['src/runtime/turn/turn-budget.ts'],
    tests: ['test/runtime/turn/turn-budget.test.ts'],
  },
  'server-files-guard': {
    timeoutMS: 15_000,
    modules: ['src/exec/server-files-guard.ts', 'src/sandbox/hidden-paths.ts'],
    tests: ['test/exec/server-files-guard.test.ts', 'test/exec/executor.test.ts'],
  },
  'revert-files': {
    modules: ['src/workspace/revert-files.ts'],
    tests: ['test/workspace/revert-files.test.ts', 'test/e2e/turn-revert.test.ts'],
  },
  'webhook-destination': {
    timeoutMS: 15_000,
    modules: ['src/workspace/webhook-destination.ts'],
    tests: ['test/workspace/webhook-destination.test.ts', 'test/runtime/webhooks/webhook-sender.test.ts'],
  },
  'permission-rules': {
    timeoutMS: 15_000,
    modules: ['src/agent/policy/permission-rules.ts'],
    tests: ['test/agent/policy/permission-rules.test.ts'],
  },
  'project-instructions': {
    modules: ['src/runtime/context/project-instructions.ts'],
    timeoutMS: 15_000,
    tests: ['test/runtime/context/project-instructions.test.ts', 'test/e2e/project-instructions.test.ts'],
  },
  'url-reading': {
    timeoutMS: 15_000,
    modules: ['src/workspace/url-reading.ts'],
    tests: ['test/workspace/url-reading.test.ts', 'test/e2e/repository-urls.test.ts'],
  },
};
