/**
 * Every `agentd serve` flag can also come from the environment, as containers and units configure
 * services (CONTRACT.md §23): `--database-url` is `AGENTD_DATABASE_URL`. A flag given on the
 * command line wins over its variable; an empty variable counts as unset; a repeatable flag's
 * variable holds its values separated by commas; a boolean's is `true` or `false`. Secrets stay in
 * files: the variables name the files (`AGENTD_TOKEN_FILE`), as the flags do.
 */
import { environmentVariableOf, SERVE_FLAGS, UsageError, type RawFlags } from './flags.ts';

/**
 * Adds to `flags` the value of each flag's variable when the command line did not give the flag.
 * Returns the names of the flags so taken, for naming the variable in an error (nameTheVariable).
 */
export function addEnvironmentFlags(flags: RawFlags, env: NodeJS.ProcessEnv): Set<string> {
  const taken = new Set<string>();
  for (const flag of SERVE_FLAGS) {
    const variable = environmentVariableOf(flag.name);
    const raw = env[variable];
    if (raw === undefined || raw === '' || flags.has(flag.name)) continue;
    if (flag.kind === 'boolean') {
      if (raw !== 'true' && raw !== 'false') throw new UsageError(`${variable}: expected true or false, got "${raw}"`);
      flags.set(flag.name, raw === 'true');
    } else if (flag.kind === 'list') {
      const values = raw.split(',').map((value) => value.trim());
      if (values.some((value) => value === '')) throw new UsageError(`${variable}: an empty item in the comma-separated list "${raw}"`);
      flags.set(flag.name, values);
    } else {
      flags.set(flag.name, raw);
    }
    taken.add(flag.name);
  }
  return taken;
}

/** A UsageError about a flag that came from its variable names the variable instead. */
export function nameTheVariable(error: unknown, fromEnvironment: ReadonlySet<string>): unknown {
  if (!(error instanceof UsageError)) return error;
  const flagName = /^--([a-z-]+):/.exec(error.message)?.[1];
  if (flagName === undefined || !fromEnvironment.has(flagName)) return error;
  return new UsageError(`${environmentVariableOf(flagName)}${error.message.slice(flagName.length + 2)}`);
}
