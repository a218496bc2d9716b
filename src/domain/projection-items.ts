/**
 * The shapes of canonical history items, content parts and computer actions as SPEC.md §2 lists
 * them. Known tags keep their listed fields; every other tag, including the recognised tags
 * listed in OPAQUE_ITEM_TYPES, keeps only `type`. Nothing here ever turns into assistant text.
 */

import {
  type FieldList,
  type Shape,
  arrayOf,
  boolean,
  either,
  fields,
  integer,
  opaque,
  record,
  tagged,
  text,
} from './projection-shapes.ts';
import { isPlainObject } from './projection-budget.ts';

/**
 * An image given inline (a data URL) shows that it was there, its type and size, not megabytes of
 * base64: the bytes stay in the stored history for the model, out of the projection's budget.
 */
const imageUrl: Shape = {
  accepts: (value) => typeof value === 'string',
  fits: (value, keyLength, budget) => text.fits(inlineImagePlaceholder(value as string), keyLength, budget),
  emit: (value, budget, owner) => text.emit(inlineImagePlaceholder(value as string), budget, owner),
};

function inlineImagePlaceholder(url: string): string {
  const dataUrl = /^data:([^;,]*)(;base64)?,/i.exec(url);
  if (!dataUrl) return url;
  const payload = url.length - dataUrl[0].length;
  const bytes = dataUrl[2] ? Math.floor((payload * 3) / 4) - (url.endsWith('==') ? 2 : url.endsWith('=') ? 1 : 0) : payload;
  return `<inline image ${dataUrl[1] || 'unknown type'}, ${bytes} bytes>`;
}

const stringArray = arrayOf(text);
const anyArray = arrayOf(opaque);
/** Safety checks (id, code?, message?, extension fields allowed): kept whole as opaque JSON. */
const openObject: Shape = { ...opaque, accepts: isPlainObject };

const textPart = fields({ text });

const contentPart = tagged(
  new Map<string, FieldList>([
    ['input_text', fields({ text, prompt_cache_breakpoint: opaque })],
    ['output_text', fields({ text, annotations: anyArray, logprobs: anyArray })],
    ['text', textPart],
    ['reasoning_text', textPart],
    ['summary_text', textPart],
    ['refusal', fields({ refusal: text })],
    ['input_image', fields({ detail: opaque, file_id: opaque, image_url: either(imageUrl, opaque), prompt_cache_breakpoint: opaque })],
    [
      'input_file',
      fields({
        detail: opaque,
        file_data: opaque,
        file_id: opaque,
        file_url: opaque,
        filename: opaque,
        prompt_cache_breakpoint: opaque,
      }),
    ],
    ['input_audio', fields({ input_audio: opaque })],
    ['encrypted_content', fields({ encrypted_content: opaque })],
  ]),
);

const parts = arrayOf(contentPart);

const pointer = fields({ x: integer, y: integer, keys: stringArray });

const computerAction = tagged(
  new Map<string, FieldList>([
    ['screenshot', []],
    ['wait', []],
    ['click', fields({ x: integer, y: integer, button: text, keys: stringArray })],
    ['double_click', pointer],
    ['move', pointer],
    ['type', fields({ text })],
    ['keypress', fields({ keys: stringArray })],
    ['scroll', fields({ x: integer, y: integer, scroll_x: integer, scroll_y: integer, keys: stringArray })],
    ['drag', fields({ path: arrayOf(record(fields({ x: integer, y: integer }))), keys: stringArray })],
  ]),
);

const computerScreenshot = tagged(
  new Map<string, FieldList>([['computer_screenshot', fields({ image_url: text, detail: opaque })]]),
);

const localShellAction = tagged(
  new Map<string, FieldList>([
    [
      'exec',
      fields({
        command: stringArray,
        timeout_ms: integer,
        working_directory: opaque,
        env: record([], text),
        user: opaque,
      }),
    ],
  ]),
);

const webSearchAction = tagged(
  new Map<string, FieldList>([
    ['search', fields({ query: opaque, queries: stringArray })],
    ['open_page', fields({ url: opaque })],
    ['find_in_page', fields({ url: opaque, pattern: opaque })],
  ]),
);

const messageMetadata = record(
  fields({ turn_id: opaque, create_time: opaque, executed_tool_calls: opaque, content_item_kinds: stringArray }),
);

/** Reasoning summary entries keep `text` whatever their tag. */
const summaryEntry = tagged(new Map(), { fallback: fields({ text }) });

const id = opaque;
const status = opaque;
const compaction = fields({ id, encrypted_content: opaque });

const historyItem = tagged(
  new Map<string, FieldList>([
    [
      'message',
      fields({
        id,
        role: opaque,
        content: either(text, parts),
        status,
        phase: opaque,
        internal_chat_message_metadata_passthrough: messageMetadata,
      }),
    ],
    [
      'agent_message',
      fields({
        id,
        author: opaque,
        recipient: opaque,
        content: parts,
        internal_chat_message_metadata_passthrough: messageMetadata,
      }),
    ],
    [
      'function_call',
      fields({
        id,
        call_id: opaque,
        name: opaque,
        namespace: opaque,
        provider: opaque,
        arguments: text,
        encrypted_function_args: opaque,
        status,
        async: boolean,
      }),
    ],
    [
      'function_call_output',
      fields({
        id,
        call_id: opaque,
        name: opaque,
        namespace: opaque,
        provider: opaque,
        output: opaque,
        status,
        async: boolean,
      }),
    ],
    [
      'custom_tool_call',
      fields({ id, call_id: opaque, name: opaque, namespace: opaque, input: text, status, async: boolean }),
    ],
    [
      'custom_tool_call_output',
      fields({ id, call_id: opaque, name: opaque, output: opaque, status, async: boolean }),
    ],
    [
      'computer_call',
      fields({
        id,
        call_id: opaque,
        actions: arrayOf(computerAction),
        pending_safety_checks: arrayOf(openObject),
        status,
      }),
    ],
    [
      'computer_call_output',
      fields({
        id,
        call_id: opaque,
        output: computerScreenshot,
        acknowledged_safety_checks: arrayOf(openObject),
        status,
      }),
    ],
    [
      'reasoning',
      fields({ id, summary: arrayOf(summaryEntry), content: parts, encrypted_content: opaque, status }),
    ],
    ['item_reference', fields({ id })],
    ['additional_tools', fields({ id, role: opaque, tools: anyArray })],
    ['local_shell_call', fields({ id, call_id: opaque, status, action: localShellAction })],
    ['tool_search_call', fields({ id, call_id: opaque, status, execution: opaque, arguments: opaque })],
    ['tool_search_output', fields({ id, call_id: opaque, status, execution: opaque, tools: anyArray })],
    ['web_search_call', fields({ id, status, action: webSearchAction })],
    ['image_generation_call', fields({ id, status, revised_prompt: text, result: text })],
    ['compaction', compaction],
    ['context_compaction', compaction],
    ['compaction_trigger', []],
  ]),
  {
    rename: new Map([['compaction_summary', 'compaction']]),
    extensible: new Set(['computer_call', 'computer_call_output']),
  },
);

/** Recognised item tags that, like unknown tags, keep only `type` (SPEC.md §2). */
export const OPAQUE_ITEM_TYPES: readonly string[] = [
  'file_search_call',
  'code_interpreter_call',
  'local_shell_call_output',
  'shell_call',
  'shell_call_output',
  'apply_patch_call',
  'apply_patch_call_output',
  'mcp_list_tools',
  'mcp_approval_request',
  'mcp_approval_response',
  'mcp_call',
  'program',
  'program_output',
];

export const historyItems = arrayOf(historyItem);
