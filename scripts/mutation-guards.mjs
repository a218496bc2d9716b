// The guard modules under mutation testing, each with the test files that must notice a loosened guard.
export const GUARDS = {
  'dangerous-commands': {
    modules: ['src/agent/policy/dangerous-commands.ts'],
    tests: ['test/edges/dangerous-commands.test.ts', 'test/agent/policy/decide.test.ts'],
  },
  access: {
    modules: ['src/http/access.ts'],
    tests: ['test/edges/access.test.ts'],
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
};
