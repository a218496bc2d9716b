import { createProviderAdapter } from '../agent/providers/index.ts';
import type { ProviderAdapter } from '../agent/providers/types.ts';
import type { Catalog, CatalogModel } from '../config/models-file.ts';

/** One provider adapter (and so one HTTP client with its connection pool) per catalog connection. */
export class AdapterCache {
  private readonly adapters = new Map<string, ProviderAdapter>();

  constructor(private readonly catalog: Catalog) {}

  adapterFor(model: CatalogModel): ProviderAdapter {
    let adapter = this.adapters.get(model.connection);
    if (!adapter) {
      const connection = this.catalog.connections.get(model.connection);
      if (!connection) throw new Error(`connection "${model.connection}" is not configured`);
      adapter = createProviderAdapter(connection.dialect, { provider: connection.provider, baseUrl: connection.baseUrl, apiKey: connection.apiKey });
      this.adapters.set(model.connection, adapter);
    }
    return adapter;
  }
}
