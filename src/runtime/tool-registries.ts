import type { Dialect } from '../agent/providers/types.ts';
import type { ToolRegistry, ToolRegistryOptions } from '../agent/tools/registry.ts';

/**
 * One tool registry per dialect for one set of tool options, built with the first turn that needs
 * it: the tools, with the TypeBox that declares their arguments, are not loaded at start-up.
 */
export function lazyToolRegistries(options: Omit<ToolRegistryOptions, 'dialect'>): (dialect: Dialect) => Promise<ToolRegistry> {
  const registries = new Map<Dialect, Promise<ToolRegistry>>();
  return (dialect) => {
    let registry = registries.get(dialect);
    if (!registry) {
      registry = import('../agent/tools/registry.ts').then(({ createToolRegistry }) => createToolRegistry({ ...options, dialect }));
      registries.set(dialect, registry);
    }
    return registry;
  };
}
