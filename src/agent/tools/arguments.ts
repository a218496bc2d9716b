/**
 * A function tool declares its arguments once, as a TypeBox object: the same schema is the JSON
 * Schema the model sees, validates the call (with a message the model can act on) and types the
 * arguments (Static). A new tool is then one call to `functionTool` in a file of its own.
 */
import type { Static, TObject, TSchema } from 'typebox';
import { Compile, type Validator } from 'typebox/compile';
import type { TLocalizedValidationError } from 'typebox/error';
import { ToolError, type Tool, type ToolContext, type ToolOutcome, type ToolPlan } from './types.ts';

export interface FunctionToolDefinition<S extends TObject, Args> {
  name: string;
  description: string;
  /** see Tool.executes */
  executes?: boolean;
  arguments: S;
  /** defaults and rules a schema cannot say (distinct after trimming, …); throws ToolError */
  refine?: (args: Static<S>) => Args;
  plan(args: Args, ctx: Pick<ToolContext, 'cwd' | 'roots'>): ToolPlan;
  run(args: Args, ctx: ToolContext): Promise<ToolOutcome>;
}

export function functionTool<S extends TObject, Args = Static<S>>(definition: FunctionToolDefinition<S, Args>): Tool<Args> {
  const { name, description, plan, run } = definition;
  const parseArguments = argumentsParser(definition.arguments);
  const refine = definition.refine ?? ((args: Static<S>) => args as unknown as Args);
  const tool: Tool<Args> = { name, kind: 'function', description, parameters: modelSchema(definition.arguments), parse: (input) => refine(parseArguments(input)), plan, run };
  return definition.executes ? { ...tool, executes: true } : tool;
}

/** The JSON Schema the model is sent: plain JSON, without TypeBox's own (non-enumerable) markers. */
export function modelSchema(schema: TObject): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

/**
 * Function-tool input → typed arguments: a JSON object (an empty string counts as `{}`) valid
 * against the schema. An optional argument sent as null counts as absent, as strict-schema models
 * send them. The schema is compiled on the first call, not when the tool is made.
 */
export function argumentsParser<S extends TObject>(schema: S): (input: string) => Static<S> {
  let validator: Validator<{}, S> | null = null;
  return (input) => {
    const value = withoutNullOptionals(schema, parseJsonObject(input));
    validator ??= Compile(schema);
    if (!validator.Check(value)) throw new ToolError(describeArgumentErrors(schema, [...validator.Errors(value)]));
    return value as Static<S>;
  };
}

function parseJsonObject(input: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = input.trim() === '' ? {} : JSON.parse(input);
  } catch (error) {
    throw new ToolError(`arguments are not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ToolError('arguments must be a JSON object');
  return value as Record<string, unknown>;
}

function withoutNullOptionals(schema: TObject, args: Record<string, unknown>): Record<string, unknown> {
  const required = new Set<string>(schema.required ?? []);
  return Object.fromEntries(Object.entries(args).filter(([key, value]) => value !== null || required.has(key) || !(key in schema.properties)));
}

/** A non-blank string: at least one character that is not white space. */
export const NON_BLANK = '\\S';

const TYPE_NAMES: Record<string, string> = { string: 'a string', integer: 'an integer', number: 'a number', boolean: 'true or false', array: 'an array', object: 'an object' };

/** One sentence naming the argument and what it must be; unknown arguments are listed together. */
function describeArgumentErrors(schema: TObject, errors: TLocalizedValidationError[]): string {
  const unknown = errors.find((error) => error.keyword === 'additionalProperties');
  if (unknown) return `unknown argument(s): ${(unknown.params as { additionalProperties: string[] }).additionalProperties.join(', ')}`;
  const error = errors.find((candidate) => candidate.keyword !== 'boolean') ?? errors[0];
  if (!error) return 'invalid arguments';
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'required') {
    const missing = (params.requiredProperties as string[]).map((property) => `"${argumentPath(`${error.instancePath}/${property}`)}"`);
    return `${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} required`;
  }
  const argument = `"${argumentPath(error.instancePath)}"`;
  const node = schemaAt(schema, error.schemaPath);
  switch (error.keyword) {
    case 'type':
    case 'minLength':
      if (node.type === 'string' && node.minLength === 1) return `${argument} must be a non-empty string`;
      if (error.keyword === 'minLength') return `${argument} must have at least ${params.limit} characters`;
      return `${argument} must be ${TYPE_NAMES[String(params.type)] ?? params.type}`;
    case 'pattern':
      return node.pattern === NON_BLANK ? `${argument} must not be blank` : `${argument} must match ${node.pattern}`;
    case 'minimum':
    case 'maximum':
      return `${argument} must be ${node.type === 'integer' ? 'an integer' : 'a number'} ${range(node)}`;
    case 'enum':
      return `${argument} must be one of ${(params.allowedValues as unknown[]).join(', ')}`;
    case 'minItems':
      return `${argument} must have at least ${params.limit} item(s)`;
    case 'maxItems':
      return `${argument} may have at most ${params.limit} items`;
    case 'anyOf':
      return `${argument} must be ${node.description ?? 'one of its documented shapes'}`;
    default:
      return `${argument} ${error.message}`;
  }
}

/** /plan/0/status → plan[0].status */
function argumentPath(instancePath: string): string {
  return instancePath.split('/').filter(Boolean).map((part, index) => (/^\d+$/.test(part) ? `[${part}]` : index === 0 ? part : `.${part}`)).join('');
}

function schemaAt(schema: TSchema, schemaPath: string): Record<string, unknown> {
  let node: unknown = schema;
  for (const part of schemaPath.replace(/^#\/?/, '').split('/').filter(Boolean)) node = (node as Record<string, unknown>)?.[part];
  return (node ?? {}) as Record<string, unknown>;
}

function range(node: Record<string, unknown>): string {
  if (node.minimum !== undefined && node.maximum !== undefined) return `from ${node.minimum} to ${node.maximum}`;
  return node.minimum !== undefined ? `of at least ${node.minimum}` : `of at most ${node.maximum}`;
}
