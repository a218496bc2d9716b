/**
 * The environment every model-driven command runs with. It is built from an allowlist, never by
 * removing secrets from the server's own: a variable reaches a tool only when its name is one of
 * the plain settings below, so the server token, provider keys (whatever their configured
 * `apiKeyEnv` name), database URLs and cloud credentials are absent by construction.
 */

/** Where programs live, who runs them, and how text, time and temporary files work. */
const ALLOWED_NAMES = new Set([
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LANGUAGE',
  'TERM',
  'COLORTERM',
  'NO_COLOR',
  'TZ',
  'TMPDIR',
]);

/** LC_ALL, LC_CTYPE, … */
const ALLOWED_PREFIX = 'LC_';

/** Keeps tools from waiting on a terminal or a password prompt nobody is watching. */
const NON_INTERACTIVE: Readonly<Record<string, string>> = Object.freeze({
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  GIT_TERMINAL_PROMPT: '0',
});

/** PATH when the server's environment has none. */
const FALLBACK_PATH = '/usr/local/bin:/usr/bin:/bin';

export function isAllowedVariable(name: string): boolean {
  return ALLOWED_NAMES.has(name) || (name.startsWith(ALLOWED_PREFIX) && /^LC_[A-Z_]+$/.test(name));
}

/**
 * The allowlisted part of `base` (the server's environment by default) plus the non-interactive
 * settings. Idempotent: applying it to its own result changes nothing.
 */
export function toolEnvironment(base: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const [name, value] of Object.entries(base)) {
    if (value !== undefined && isAllowedVariable(name)) environment[name] = value;
  }
  environment.PATH ??= FALLBACK_PATH;
  return { ...environment, ...NON_INTERACTIVE };
}
