/**
 * Structured results (CONTRACT.md §22): a turn may carry an `outputSchema`, a JSON Schema its final
 * answer must satisfy. The schema is checked and compiled once at admission (Ajv, the validator
 * Fastify already brings; loaded only by turns that carry one), given to the model in its dialect's
 * native form (ModelRequest.outputFormat), and the loop validates the final answer, asking the model
 * again at most MAX_OUTPUT_REASKS times with the validation errors before it gives up.
 *
 * Patterns of a schema (pattern, patternProperties) run on RE2 (re2js), as the search tool's do: a
 * schema comes from a client, and a backtracking engine would let one regular expression hold the
 * process for minutes (ReDoS). A pattern RE2 cannot run (look-around, back-references) is refused.
 */
import { RE2JS } from 're2js';
import type { CanonicalItem } from './providers/types.ts';

/** The largest schema taken, as its compact JSON text in UTF-8 bytes. */
export const MAX_OUTPUT_SCHEMA_BYTES = 64 * 1024;
/** How often a final answer that is not valid is sent back to the model before the turn fails. */
export const MAX_OUTPUT_REASKS = 2;
/** Validation errors shown to the model (and in the failure) at most. */
const MAX_PROBLEMS = 10;
/** Compiled schemas kept by their JSON text: a script that sends the same schema every turn compiles it once. */
const KEPT_SCHEMAS = 32;
const kept = new Map<string, OutputSchema>();
/** The name the dialects that need one give the format. */
export const OUTPUT_FORMAT_NAME = 'result';

/** A schema accepted at admission: its JSON text (as stored with the turn) and its validator. */
export interface OutputSchema {
  readonly schema: Record<string, unknown>;
  readonly json: string;
  /** the problems of `value` against the schema; empty when it is valid */
  problems(value: unknown): string[];
}

/** Why a schema was refused at admission (the API answers 422 `invalid_output_schema` with it). */
export class OutputSchemaRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutputSchemaRefused';
  }
}

/** The final answer was still not valid after the re-asks: the turn fails with `output_invalid`. */
export class OutputInvalid extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutputInvalid';
  }
}

type AjvInstance = { compile(schema: object): ValidateFunction };
type ValidateFunction = ((data: unknown) => boolean) & { errors?: Array<{ instancePath: string; message?: string }> | null };
let ajvLoading: Promise<AjvInstance> | null = null;

/** One Ajv for the process (its compiled schemas are cached by identity of the schema object: none are kept). */
function ajv(): Promise<AjvInstance> {
  ajvLoading ??= (async () => {
    const [{ Ajv }, { default: addFormats }] = await Promise.all([import('ajv'), import('ajv-formats')]);
    // optimize off: Ajv's optimizing pass costs more than it saves on a schema compiled once per turn (a 64 KiB
    // schema of 900 properties: about 1.3 s with it, 0.4 s without, docs/API.md "Structured results")
    const instance = new Ajv({ allErrors: true, strict: false, code: { regExp: re2Engine, optimize: false } });
    (addFormats as unknown as (ajv: unknown) => void)(instance);
    return { compile: (schema) => instance.compile(schema) as ValidateFunction };
  })();
  return ajvLoading;
}

/** Ajv's regular-expression engine interface over RE2 (Ajv's `code.regExp` option). */
const re2Engine = Object.assign(
  (pattern: string) => {
    const compiled = RE2JS.compile(pattern);
    return { test: (text: string) => compiled.matcher(text).find() };
  },
  { code: 're2' },
);

/**
 * Checks and compiles a client's schema: a JSON object of at most 64 KiB whose root describes an
 * object (`"type": "object"`, as the providers' native structured outputs require), which Ajv
 * accepts as a schema. Throws OutputSchemaRefused saying why.
 */
export async function compileOutputSchema(schema: unknown): Promise<OutputSchema> {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) throw new OutputSchemaRefused('outputSchema must be a JSON Schema object');
  const json = JSON.stringify(schema);
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_OUTPUT_SCHEMA_BYTES) throw new OutputSchemaRefused(`outputSchema is ${bytes} bytes of JSON; at most ${MAX_OUTPUT_SCHEMA_BYTES} are taken`);
  const known = kept.get(json);
  if (known) return known;
  const root = schema as Record<string, unknown>;
  if (root.type !== 'object') throw new OutputSchemaRefused('outputSchema must describe an object: its root needs "type": "object"');
  let validate: ValidateFunction;
  try {
    validate = (await ajv()).compile(structuredClone(root));
  } catch (error) {
    throw new OutputSchemaRefused(`outputSchema is not a schema agentd can use: ${firstLine(error)}`);
  }
  const compiled: OutputSchema = {
    schema: root,
    json,
    problems(value) {
      if (validate(value)) return [];
      return (validate.errors ?? []).slice(0, MAX_PROBLEMS).map((error) => `${error.instancePath || '(root)'}: ${error.message ?? 'is not valid'}`);
    },
  };
  if (kept.size >= KEPT_SCHEMAS) kept.delete(kept.keys().next().value!);
  kept.set(json, compiled);
  return compiled;
}

/** The answer text as a result: the parsed value when it is JSON valid against the schema, else the problems. */
export function checkAnswer(outputSchema: OutputSchema, text: string | null): { result: unknown } | { problems: string[] } {
  if (text === null || text.trim() === '') return { problems: ['the answer is empty: it must be one JSON value'] };
  let value: unknown;
  try {
    value = JSON.parse(stripCodeFence(text));
  } catch (error) {
    return { problems: [`the answer is not JSON (${firstLine(error)})`] };
  }
  const problems = outputSchema.problems(value);
  return problems.length === 0 ? { result: value } : { problems };
}

/** The user message that sends an answer back, with what was wrong with it. */
export function reaskItem(problems: string[]): CanonicalItem {
  const text = [
    'Your final answer is not valid against the required output schema:',
    ...problems.map((problem) => `- ${problem}`),
    'Answer again with only the corrected JSON value, valid against the schema, and nothing around it.',
  ].join('\n');
  return { type: 'message', role: 'user', content: [{ type: 'input_text', text }] };
}

/** The instruction added while a turn has a schema (the schema itself goes in the dialect's native field). */
export const STRUCTURED_ANSWER_INSTRUCTION =
  'This turn has an output schema: when you are done (after any tool calls), your final answer must be one JSON value valid against the schema given as the response format, with no prose or code fence around it.';

/** Models wrap JSON in a ```json fence now and then; what is inside is the answer. */
function stripCodeFence(text: string): string {
  const fenced = /^\s*```[a-zA-Z]*\n([\s\S]*?)\n```\s*$/.exec(text);
  return fenced ? fenced[1]! : text;
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!.slice(0, 300);
}
