import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from 'typebox';
import { argumentsParser, functionTool, NON_BLANK } from '../../../src/agent/tools/arguments.ts';
import { createToolRegistry } from '../../../src/agent/tools/registry.ts';
import { ToolError } from '../../../src/agent/tools/types.ts';

const Example = Type.Object(
  {
    path: Type.String({ minLength: 1 }),
    depth: Type.Optional(Type.Integer({ minimum: 1, maximum: 5 })),
    mode: Type.Optional(Type.Enum(['fast', 'slow'])),
    steps: Type.Optional(Type.Array(Type.Object({ step: Type.String({ pattern: NON_BLANK }) }, { additionalProperties: false }), { maxItems: 2 })),
  },
  { additionalProperties: false },
);
const parse = argumentsParser(Example);

function messageOf(input: string): string {
  try {
    parse(input);
  } catch (error) {
    assert.ok(error instanceof ToolError, 'every refusal is a ToolError the model reads');
    return error.message;
  }
  assert.fail(`${input} was accepted`);
}

test('each refusal names the argument and what it must be', () => {
  assert.equal(messageOf('{}'), '"path" is required');
  assert.equal(messageOf('{"path":3}'), '"path" must be a non-empty string');
  assert.equal(messageOf('{"path":""}'), '"path" must be a non-empty string');
  assert.equal(messageOf('{"path":"a","depth":9}'), '"depth" must be an integer from 1 to 5');
  assert.equal(messageOf('{"path":"a","depth":1.5}'), '"depth" must be an integer');
  assert.equal(messageOf('{"path":"a","mode":"medium"}'), '"mode" must be one of fast, slow');
  assert.equal(messageOf('{"path":"a","steps":[{"step":"  "}]}'), '"steps[0].step" must not be blank');
  assert.equal(messageOf('{"path":"a","steps":[{"step":"a"},{"step":"b"},{"step":"c"}]}'), '"steps" may have at most 2 items');
  assert.equal(messageOf('{"path":"a","steps":[{"step":"a","extra":1}]}'), 'unknown argument(s): extra');
  assert.equal(messageOf('{"path":"a","x":1,"y":2}'), 'unknown argument(s): x, y');
  assert.match(messageOf('{"path":'), /^arguments are not valid JSON: /);
  assert.equal(messageOf('[1]'), 'arguments must be a JSON object');
});

test('an optional argument sent as null counts as absent; a required one does not', () => {
  assert.deepEqual(parse('{"path":"a","depth":null,"mode":null}'), { path: 'a' });
  assert.equal(messageOf('{"path":null}'), '"path" must be a non-empty string');
  assert.equal(messageOf('{"path":"a","other":null}'), 'unknown argument(s): other');
  assert.deepEqual(argumentsParser(Type.Object({}))(''), {}, 'an empty input is an empty object');
});

test('a function tool sends the model the schema it validates with, as plain JSON', () => {
  const tool = functionTool({
    name: 'example',
    description: 'an example',
    arguments: Example,
    refine: (args) => ({ ...args, depth: args.depth ?? 2 }),
    plan: () => ({ readOnly: true, paths: [] }),
    run: async () => ({ output: '', truncated: false, ok: true }),
  });
  assert.deepEqual(tool.parameters, JSON.parse(JSON.stringify(Example)));
  assert.equal(Object.getOwnPropertyNames(tool.parameters!.properties as object).length, 4);
  assert.deepEqual(tool.parse('{"path":"x"}'), { path: 'x', depth: 2 });
});

test('every function tool of the registry offers an object schema that refuses unknown arguments, without TypeBox markers', () => {
  for (const dialect of ['openai-responses', 'openai-chat', 'anthropic-messages'] as const) {
    const registry = createToolRegistry({ dialect, search: { ripgrepPath: null } });
    for (const spec of registry.specs.filter((candidate) => candidate.kind === 'function')) {
      const schema = spec.parameters as { type: string; additionalProperties: boolean; properties: Record<string, unknown> };
      assert.equal(schema.type, 'object', spec.name);
      assert.equal(schema.additionalProperties, false, spec.name);
      assert.ok(!JSON.stringify(schema).includes('~'), spec.name);
      assert.deepEqual(Object.getOwnPropertyNames(schema).sort(), Object.keys(schema).sort(), `${spec.name}: only plain JSON properties`);
      assert.equal(registry.prepare({ name: spec.name, input: '{"not_an_argument":1}' }, { cwd: '/', roots: ['/'] }).ok, false, spec.name);
    }
  }
});
