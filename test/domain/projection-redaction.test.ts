import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createProjectionBudget, projectAgents, projectHistoryItems } from '../../src/domain/projection.ts';

type Json = Record<string, any>;

function projectOutput(output: unknown): Json {
  const [item] = projectHistoryItems([{ type: 'function_call_output', call_id: 'c', output }], createProjectionBudget()) as Json[];
  return item.output;
}

const spellings = [
  'encrypted_content',
  'ENCRYPTED_CONTENT',
  'Encrypted_Content',
  'encryptedcontent',
  'encryptedContent',
  'ENCRYPTEDCONTENT',
  'encrypted_function_args',
  'ENCRYPTED_FUNCTION_ARGS',
  'Encrypted_Function_Args',
  'encryptedfunctionargs',
  'encryptedFunctionArgs',
  'ENCRYPTEDFUNCTIONARGS',
];

describe('redaction (SPEC.md §2, CONTRACT.md §8)', () => {
  for (const key of spellings) {
    it(`replaces the value of ${key} whatever its type`, () => {
      for (const value of ['secret', ['a', 'b'], { nested: 'secret' }, 42, null, true]) {
        assert.deepEqual(projectOutput({ [key]: value, other: 'kept' }), { [key]: '<redacted>', other: 'kept' });
      }
    });
  }

  it('redacts at any depth, inside arrays and extension fields', () => {
    assert.deepEqual(projectOutput([{ a: [{ b: { EncryptedContent: 'x' } }] }]), [{ a: [{ b: { EncryptedContent: '<redacted>' } }] }]);
    const [item] = projectHistoryItems(
      [{ type: 'computer_call', call_id: 'c', actions: [], vendor: { Encrypted_Function_Args: ['x'] } }],
      createProjectionBudget(),
    ) as Json[];
    assert.deepEqual(item.vendor, { Encrypted_Function_Args: '<redacted>' });
  });

  it('does not redact look-alike keys, arguments, text or tool output', () => {
    const value = {
      encrypted_content_id: 'kept',
      encrypted: 'kept',
      content: 'kept',
      arguments: '{"encrypted_content":"inside a string is not a key"}',
      xencryptedcontent: 'kept',
    };
    assert.deepEqual(projectOutput(value), value);
  });

  it('never lets encrypted values through the agent view', () => {
    const agents = projectAgents([
      { path: '/root', status: 'running', model: null, steps: [], encrypted_content: 'secret' } as never,
    ]);
    assert.equal(JSON.stringify(agents).includes('secret'), false);
  });
});
