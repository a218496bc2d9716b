import { fileURLToPath } from 'node:url';

export const REPOSITORY = fileURLToPath(new URL('../..', import.meta.url));

/** `agentd chat ARGS` from source: the real CLI entry (src/cli/main.ts) through tsx. */
export function chatCommand(args: string[]): string[] {
  const script = `import(${JSON.stringify(`${REPOSITORY}src/cli/main.ts`)}).then((cli) => cli.main(['chat', ...JSON.parse(process.argv[1])]))`;
  return [process.execPath, '--import', `${REPOSITORY}node_modules/tsx/dist/loader.mjs`, '--input-type=module', '-e', script, JSON.stringify(args)];
}
