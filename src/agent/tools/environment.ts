/**
 * The environment model-driven commands run with: the server's own, minus every secret the server
 * holds (its bearer token, provider keys, database passwords), plus settings that keep tools from
 * waiting on a terminal nobody is watching.
 */

const NAMED_SECRETS = new Set(['SERVICE_TOKEN', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'PGPASSWORD', 'DATABASE_URL']);
const SECRET_SUFFIX = /(_API_KEY|_TOKEN|_SECRET|_PASSWORD)$/i;

const NON_INTERACTIVE = {
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  GIT_TERMINAL_PROMPT: '0',
};

/**
 * @param extraSecretNames further variables to strip, e.g. the `apiKeyEnv` names of configured
 *   model connections, whose names need not follow the *_API_KEY convention
 */
export function scrubEnvironment(
  env: NodeJS.ProcessEnv,
  extraSecretNames: readonly string[] = [],
): Record<string, string> {
  const extra = new Set(extraSecretNames);
  const scrubbed: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (NAMED_SECRETS.has(name.toUpperCase()) || SECRET_SUFFIX.test(name) || extra.has(name)) continue;
    scrubbed[name] = value;
  }
  return { ...scrubbed, ...NON_INTERACTIVE };
}
