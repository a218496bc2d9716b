/** Small validators for tool arguments; every failure is a ToolError the model can read and fix. */
import { ToolError } from './types.ts';

export type JsonObject = Record<string, unknown>;

/** Function-tool input: a JSON object (an empty string counts as `{}`); unknown keys are rejected. */
export function parseJsonArguments(input: string, allowedKeys: readonly string[]): JsonObject {
  let value: unknown;
  try {
    value = input.trim() === '' ? {} : JSON.parse(input);
  } catch (error) {
    throw new ToolError(`arguments are not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ToolError('arguments must be a JSON object');
  }
  const unknown = Object.keys(value).filter((key) => !allowedKeys.includes(key));
  if (unknown.length > 0) throw new ToolError(`unknown argument(s): ${unknown.join(', ')}`);
  return value as JsonObject;
}

export function requiredString(args: JsonObject, key: string): string {
  const value = args[key];
  if (typeof value !== 'string' || value === '') throw new ToolError(`"${key}" must be a non-empty string`);
  return value;
}

/** Optional values may also be sent as null, as strict-schema models do. */
export function optionalString(args: JsonObject, key: string): string | undefined {
  const value = args[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new ToolError(`"${key}" must be a string`);
  return value;
}

export function optionalInteger(args: JsonObject, key: string, min: number, max: number): number | undefined {
  const value = args[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ToolError(`"${key}" must be an integer from ${min} to ${max}`);
  }
  return value;
}

export function requiredStringArray(args: JsonObject, key: string): string[] {
  const value = args[key];
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) {
    throw new ToolError(`"${key}" must be an array of strings`);
  }
  return value as string[];
}
