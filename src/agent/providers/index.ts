/**
 * The adapter for a connection's wire dialect, from the dialect's descriptor (dialects.ts): every
 * adapter speaks the same ProviderAdapter interface; `fetch` is injectable for tests and custom
 * transports.
 *
 * Canonical history may mix dialects after a fork. Items only one dialect can read carry a
 * `provider` origin marker: 'anthropic' (thinking, redacted thinking, server tool blocks) or
 * 'openai-chat' (plain-text reasoning). Each adapter leaves out what it cannot read itself.
 */
import { descriptorOf } from './dialects.ts';
import type { ProviderAdapterOptions } from './dialect-descriptor.ts';
import type { ConnectionSettings, Dialect, ProviderAdapter } from './types.ts';

export type { ProviderAdapterOptions };

export async function createProviderAdapter(dialect: Dialect, connection: ConnectionSettings, options: ProviderAdapterOptions = {}): Promise<ProviderAdapter> {
  const create = await descriptorOf(dialect).loadAdapter();
  return create(connection, options);
}
