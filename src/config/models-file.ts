import { readFileSync } from 'node:fs';
import { DIALECTS, type Dialect } from '../domain/dialect.ts';
import { EFFORTS, type Effort } from '../domain/effort.ts';

interface ModelPrices {
  /** US dollars per million tokens */
  inputPerMillion: number;
  outputPerMillion: number;
  cachedInputPerMillion: number | null;
}

export interface CatalogConnection {
  id: string;
  provider: string;
  dialect: Dialect;
  baseUrl: string;
  apiKey: string | null;
}

export interface CatalogModel {
  id: string;
  provider: string;
  connection: string;
  transportModel: string;
  dialect: Dialect;
  label: string | null;
  contextWindow: number | null;
  maxOutputTokens: number | null;
  efforts: Effort[];
  defaultEffort: Effort;
  prices: ModelPrices | null;
}

export interface Catalog {
  defaultModelId: string | null;
  models: CatalogModel[];
  connections: Map<string, CatalogConnection>;
}

export class ModelsFileError extends Error {}

type Json = Record<string, unknown>;

/** Parses a models file (CONTRACT.md §9). Every error names the file and the field. */
export function parseModelsFile(path: string, text: string, env: NodeJS.ProcessEnv): Omit<Catalog, 'connections'> & { connections: CatalogConnection[] } {
  const fail = (field: string, problem: string): never => {
    throw new ModelsFileError(`models file ${path}: ${field}: ${problem}`);
  };
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    return fail('(document)', `not valid JSON (${(error as Error).message})`);
  }
  if (!isObject(document)) return fail('(document)', 'must be a JSON object');
  allowOnly(document, ['defaultModel', 'connections', 'models'], '(document)', fail);
  const connections = arrayField(document, 'connections', '', fail).map((entry, index) => {
    const at = `connections[${index}]`;
    if (!isObject(entry)) return fail(at, 'must be an object');
    allowOnly(entry, ['id', 'provider', 'dialect', 'baseUrl', 'apiKeyEnv'], at, fail);
    const dialect = stringField(entry, 'dialect', at, fail) as Dialect;
    if (!DIALECTS.includes(dialect)) fail(`${at}.dialect`, `must be one of ${DIALECTS.join(', ')}`);
    const baseUrl = stringField(entry, 'baseUrl', at, fail);
    if (!/^https?:\/\//.test(baseUrl)) fail(`${at}.baseUrl`, 'must be an http(s) URL');
    const apiKeyEnv = entry.apiKeyEnv ?? null;
    if (apiKeyEnv !== null && (typeof apiKeyEnv !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(apiKeyEnv))) {
      fail(`${at}.apiKeyEnv`, 'must be an environment variable name or null');
    }
    return {
      id: stringField(entry, 'id', at, fail),
      provider: stringField(entry, 'provider', at, fail),
      dialect,
      baseUrl: baseUrl.replace(/\/+$/, ''),
      apiKey: apiKeyEnv ? (env[apiKeyEnv as string] ?? null) : null,
    };
  });
  const connectionIds = new Set<string>();
  connections.forEach((connection, index) => {
    if (connectionIds.has(connection.id)) fail(`connections[${index}].id`, `duplicate id "${connection.id}"`);
    connectionIds.add(connection.id);
  });

  const models = arrayField(document, 'models', '', fail).map((entry, index): CatalogModel => {
    const at = `models[${index}]`;
    if (!isObject(entry)) return fail(at, 'must be an object');
    allowOnly(entry, ['id', 'connection', 'transportModel', 'label', 'contextWindow', 'maxOutputTokens', 'efforts', 'defaultEffort', 'prices'], at, fail);
    const connectionId = stringField(entry, 'connection', at, fail);
    const connection = connections.find((candidate) => candidate.id === connectionId);
    if (!connection) fail(`${at}.connection`, `no connection with id "${connectionId}"`);
    const efforts = (entry.efforts ?? ['none']) as unknown;
    if (!Array.isArray(efforts) || efforts.length === 0 || efforts.some((effort) => !EFFORTS.includes(effort as Effort))) {
      fail(`${at}.efforts`, `must be a non-empty array of ${EFFORTS.join(', ')}`);
    }
    const defaultEffort = (entry.defaultEffort ?? (efforts as Effort[])[0]) as Effort;
    if (!(efforts as Effort[]).includes(defaultEffort)) fail(`${at}.defaultEffort`, 'must be one of the model\'s efforts');
    return {
      id: stringField(entry, 'id', at, fail),
      provider: connection!.provider,
      connection: connectionId,
      transportModel: stringField(entry, 'transportModel', at, fail),
      dialect: connection!.dialect,
      label: optionalString(entry, 'label', at, fail),
      contextWindow: optionalPositiveInteger(entry, 'contextWindow', at, fail),
      maxOutputTokens: optionalPositiveInteger(entry, 'maxOutputTokens', at, fail),
      efforts: efforts as Effort[],
      defaultEffort,
      prices: parsePrices(entry.prices, `${at}.prices`, fail),
    };
  });
  const modelIds = new Set<string>();
  models.forEach((model, index) => {
    if (modelIds.has(model.id)) fail(`models[${index}].id`, `duplicate id "${model.id}"`);
    modelIds.add(model.id);
  });
  const defaultModelId = document.defaultModel ?? null;
  if (defaultModelId !== null && (typeof defaultModelId !== 'string' || !modelIds.has(defaultModelId))) {
    fail('defaultModel', 'must be the id of a model in this file');
  }
  return { defaultModelId: defaultModelId as string | null, models, connections };
}

export function readModelsFile(path: string, env: NodeJS.ProcessEnv) {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ModelsFileError(`models file ${path}: cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return parseModelsFile(path, text, env);
}

function parsePrices(value: unknown, at: string, fail: (field: string, problem: string) => never): ModelPrices | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) return fail(at, 'must be an object');
  allowOnly(value, ['inputPerMillion', 'outputPerMillion', 'cachedInputPerMillion'], at, fail);
  const price = (name: string, required: boolean): number | null => {
    const raw = value[name];
    if (raw === undefined || raw === null) return required ? fail(`${at}.${name}`, 'is required') : null;
    if (typeof raw !== 'number' || !(raw >= 0)) return fail(`${at}.${name}`, 'must be a number >= 0');
    return raw;
  };
  return { inputPerMillion: price('inputPerMillion', true)!, outputPerMillion: price('outputPerMillion', true)!, cachedInputPerMillion: price('cachedInputPerMillion', false) };
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function allowOnly(object: Json, keys: string[], at: string, fail: (field: string, problem: string) => never) {
  for (const key of Object.keys(object)) if (!keys.includes(key)) fail(at === '(document)' ? key : `${at}.${key}`, 'unknown field');
}

function arrayField(object: Json, name: string, at: string, fail: (field: string, problem: string) => never): unknown[] {
  const value = object[name] ?? [];
  if (!Array.isArray(value)) return fail(at ? `${at}.${name}` : name, 'must be an array');
  return value;
}

function stringField(object: Json, name: string, at: string, fail: (field: string, problem: string) => never): string {
  const value = object[name];
  if (typeof value !== 'string' || value.trim() === '') return fail(`${at}.${name}`, 'must be a non-empty string');
  return value;
}

function optionalString(object: Json, name: string, at: string, fail: (field: string, problem: string) => never): string | null {
  const value = object[name] ?? null;
  if (value !== null && typeof value !== 'string') return fail(`${at}.${name}`, 'must be a string or null');
  return value as string | null;
}

function optionalPositiveInteger(object: Json, name: string, at: string, fail: (field: string, problem: string) => never): number | null {
  const value = object[name] ?? null;
  if (value !== null && !(Number.isInteger(value) && (value as number) > 0)) return fail(`${at}.${name}`, 'must be a positive integer or null');
  return value as number | null;
}
