/** Every wire dialect agentd speaks, by its descriptor: adding a dialect is its folder and a line here. */
import type { DialectDescriptor } from './dialect-descriptor.ts';
import type { Dialect } from './types.ts';
import { openAIResponses } from './openai-responses/descriptor.ts';
import { anthropicMessages } from './anthropic-messages/descriptor.ts';
import { openAIChat } from './openai-chat/descriptor.ts';

const DIALECT_DESCRIPTORS: Readonly<Record<Dialect, DialectDescriptor>> = {
  'openai-responses': openAIResponses,
  'anthropic-messages': anthropicMessages,
  'openai-chat': openAIChat,
};

export function descriptorOf(dialect: Dialect): DialectDescriptor {
  return DIALECT_DESCRIPTORS[dialect];
}
