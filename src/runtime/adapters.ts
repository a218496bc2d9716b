import type { ProviderAdapter } from '../agent/providers/types.ts';
import type { Catalog, CatalogModel } from '../config/models-file.ts';

/**
 * One provider adapter (and so one HTTP client with its connection pool) per catalog connection.
 * The provider SDKs are loaded on the first turn, not at start-up.
 */
export class AdapterCache {
  private readonly adapters = new Map<string, ProviderAdapter>();

  constructor(private readonly catalog: Catalog) {}

  async adapterFor(model: CatalogModel): Promise<ProviderAdapter> {
    let adapter = this.adapters.get(model.connection);
    if (!adapter) {
      const connection = this.catalog.connections.get(model.connection);
      if (!connection) throw new Error(`connection "${model.connection}" is not configured`);
      const { createProviderAdapter } = await import('../agent/providers/index.ts');
      const created = await createProviderAdapter(connection.dialect, { provider: connection.provider, baseUrl: connection.baseUrl, apiKey: connection.apiKey });
      adapter = this.adapters.get(model.connection) ?? created;
      this.adapters.set(model.connection, adapter);
    }
    return adapter;
  }
}
