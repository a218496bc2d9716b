import { existsSync } from 'node:fs';
import { readModelsFile, type Catalog, type CatalogConnection, type CatalogModel } from './models-file.ts';
import type { Config } from './config.ts';

/** Built-in connections appear when their key is in the environment (CONTRACT.md §9). */
const BUILT_IN = [
  {
    keyEnv: 'OPENAI_API_KEY',
    connection: { id: 'openai', provider: 'openai', dialect: 'openai-responses', baseUrl: 'https://api.openai.com/v1' },
    models: [
      { id: 'gpt-5.1', transportModel: 'gpt-5.1', label: 'GPT-5.1', contextWindow: 400000, efforts: ['none', 'low', 'medium', 'high'], defaultEffort: 'medium' },
      { id: 'gpt-5-mini', transportModel: 'gpt-5-mini', label: 'GPT-5 mini', contextWindow: 400000, efforts: ['low', 'medium', 'high'], defaultEffort: 'medium' },
      { id: 'gpt-4.1', transportModel: 'gpt-4.1', label: 'GPT-4.1', contextWindow: 1047576, efforts: ['none'], defaultEffort: 'none' },
    ],
  },
  {
    keyEnv: 'ANTHROPIC_API_KEY',
    connection: { id: 'anthropic', provider: 'anthropic', dialect: 'anthropic-messages', baseUrl: 'https://api.anthropic.com' },
    models: [
      { id: 'claude-sonnet-4-5', transportModel: 'claude-sonnet-4-5', label: 'Claude Sonnet 4.5', contextWindow: 200000, efforts: ['none', 'low', 'medium', 'high', 'max'], defaultEffort: 'none' },
      { id: 'claude-opus-4-1', transportModel: 'claude-opus-4-1', label: 'Claude Opus 4.1', contextWindow: 200000, efforts: ['none', 'low', 'medium', 'high', 'max'], defaultEffort: 'none' },
      { id: 'claude-haiku-4-5', transportModel: 'claude-haiku-4-5', label: 'Claude Haiku 4.5', contextWindow: 200000, efforts: ['none', 'low', 'medium', 'high'], defaultEffort: 'none' },
    ],
  },
] as const;

/** The model catalog: the models file first, then built-in connections whose key is set. */
export function loadCatalog(config: Config, env: NodeJS.ProcessEnv): Catalog {
  const models: CatalogModel[] = [];
  const connections = new Map<string, CatalogConnection>();
  let defaultModelId: string | null = null;

  const path = config.modelsFile;
  if (path && (!config.modelsFileIsDefault || existsSync(path))) {
    const file = readModelsFile(path, env);
    for (const connection of file.connections) connections.set(connection.id, connection);
    models.push(...file.models);
    defaultModelId = file.defaultModelId;
  }

  for (const builtIn of BUILT_IN) {
    const apiKey = env[builtIn.keyEnv];
    if (!apiKey || connections.has(builtIn.connection.id)) continue;
    connections.set(builtIn.connection.id, { ...builtIn.connection, apiKey });
    for (const model of builtIn.models) {
      if (models.some((existing) => existing.id === model.id)) continue;
      models.push({
        ...model,
        efforts: [...model.efforts],
        provider: builtIn.connection.provider,
        connection: builtIn.connection.id,
        dialect: builtIn.connection.dialect,
        maxOutputTokens: null,
        prices: null,
      });
    }
  }
  return { defaultModelId: defaultModelId ?? models[0]?.id ?? null, models, connections };
}

/** The start-up warning for an empty catalog, which would otherwise go unnoticed until the first session fails. */
export function emptyCatalogAdvice(): string {
  const keys = BUILT_IN.map((builtIn) => builtIn.keyEnv).join(' or ');
  return `no models configured: creating a session fails with 503 model_catalog_empty until you set ${keys} or start with --models-file FILE (README.md, section "Configuring models")`;
}

export function findModel(catalog: Catalog, id: string): CatalogModel | undefined {
  return catalog.models.find((model) => model.id === id);
}
