/**
 * Structured results (CONTRACT.md §22): a turn may carry an `outputSchema`, a JSON Schema its final
 * answer must satisfy. The schema is checked and compiled once at admission (Ajv, in a worker thread:
 * schema-worker.ts, started by the first turn that carries one, since a 64 KiB schema takes the
 * better part of a second to compile and must not hold the event loop), given to the model in its dialect's
 * native form (ModelRequest.outputFormat), and the loop validates the final answer, asking the model
 * again at most MAX_OUTPUT_REASKS times with the validation errors before it gives up.
 *
 * Patterns of a schema (pattern, patternProperties) run on RE2 (re2js), as the search tool's do: a
 * schema comes from a client, and a backtracking engine would let one regular expression hold the
 * process for minutes (ReDoS). A pattern RE2 cannot run (look-around, back-references) is refused.
 */
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { CanonicalItem } from './providers/types.ts';
import type { SchemaAnswer, SchemaJob } from './schema-worker.ts';

/** The largest schema taken, as its compact JSON text in UTF-8 bytes. */
const MAX_OUTPUT_SCHEMA_BYTES = 64 * 1024;
/** How often a final answer that is not valid is sent back to the model before the turn fails. */
export const MAX_OUTPUT_REASKS = 2;
/** Compiled schemas kept by their JSON text: a script that sends the same schema every turn compiles it once. */
const KEPT_SCHEMAS = 32;
const kept = new Map<string, OutputSchema>();
/** The name the dialects that need one give the format. */
export const OUTPUT_FORMAT_NAME = 'result';

/** A schema accepted at admission: its JSON text (as stored with the turn) and its validator. */
export interface OutputSchema {
  readonly schema: Record<string, unknown>;
  readonly json: string;
  /** the problems of `value` against the schema; empty when it is valid (checked in the schema worker) */
  problems(value: unknown): Promise<string[]>;
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

/** The one schema worker of the process, started on first use; a worker that died is started again. */
let worker: { call(job: DistributiveOmit<SchemaJob, 'id'>): Promise<SchemaAnswer> } | null = null;
type DistributiveOmit<T, K extends keyof any> = T extends unknown ? Omit<T, K> : never;

function schemaWorker(): NonNullable<typeof worker> {
  if (worker) return worker;
  const compiled = new URL('./schema-worker.js', import.meta.url);
  // from source (tests, through tsx) the worker is the .ts file, loaded by the tsx the process was
  // started with (its execArgv); built, it needs none of the process's flags (some are refused in a worker)
  const built = existsSync(compiled);
  const thread = new Worker(built ? compiled : new URL('./schema-worker.ts', import.meta.url), { execArgv: built ? [] : loaderFlags(process.execArgv) });
  const waiting = new Map<number, (answer: SchemaAnswer) => void>();
  let next = 0;
  const fail = (error: unknown) => {
    worker = null;
    for (const [id, settle] of waiting) settle({ id, refused: `the schema worker stopped (${error instanceof Error ? error.message : String(error)})` });
    waiting.clear();
  };
  thread.on('message', (answer: SchemaAnswer) => {
    waiting.get(answer.id)?.(answer);
    waiting.delete(answer.id);
    if (waiting.size === 0) thread.unref();
  });
  thread.on('error', fail);
  thread.on('exit', (code) => fail(new Error(`exit ${code}`)));
  // after the listeners, which ref the thread: only a job under way keeps the process alive
  thread.unref();
  worker = {
    call(job) {
      const id = next++;
      return new Promise((resolve) => {
        if (waiting.size === 0) thread.ref();
        waiting.set(id, resolve);
        thread.postMessage({ ...job, id });
      });
    },
  };
  return worker;
}

/** The module-loader flags of the process (tsx's `--import`), without those a worker refuses (`--input-type`, `-e`). */
function loaderFlags(execArgv: readonly string[]): string[] {
  const flags: string[] = [];
  const loaders = ['--import', '--require', '-r', '--loader', '--experimental-loader'];
  execArgv.forEach((flag, index) => {
    if (loaders.includes(flag) && index + 1 < execArgv.length) flags.push(flag, execArgv[index + 1]!);
    else if (loaders.some((loader) => flag.startsWith(`${loader}=`))) flags.push(flag);
  });
  return flags;
}

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
  const answer = await schemaWorker().call({ kind: 'compile', json });
  if ('refused' in answer) throw new OutputSchemaRefused(`outputSchema is not a schema agentd can use: ${answer.refused}`);
  const compiled: OutputSchema = {
    schema: root,
    json,
    async problems(value) {
      const checked = await schemaWorker().call({ kind: 'check', json, value });
      if ('refused' in checked) throw new Error(checked.refused);
      return checked.problems;
    },
  };
  if (kept.size >= KEPT_SCHEMAS) kept.delete(kept.keys().next().value!);
  kept.set(json, compiled);
  return compiled;
}

/** The answer text as a result: the parsed value when it is JSON valid against the schema, else the problems. */
export async function checkAnswer(outputSchema: OutputSchema, text: string | null): Promise<{ result: unknown } | { problems: string[] }> {
  if (text === null || text.trim() === '') return { problems: ['the answer is empty: it must be one JSON value'] };
  let value: unknown;
  try {
    value = JSON.parse(stripCodeFence(text));
  } catch (error) {
    return { problems: [`the answer is not JSON (${firstLine(error)})`] };
  }
  const problems = await outputSchema.problems(value);
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
