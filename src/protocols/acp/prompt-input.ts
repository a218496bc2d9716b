import type { ContentBlock } from '@agentclientprotocol/sdk';
import type { CreateTurn } from '../../client/index.ts';

type ImageAttachment = NonNullable<CreateTurn['images']>[number];
type FileAttachment = NonNullable<CreateTurn['files']>[number];

/**
 * An ACP prompt as agentd's turn body: text blocks are the input; an image is an image
 * attachment; a resource link is named in the input (the agent reads it with its tools, inside
 * the workspace); an embedded text resource is quoted into the input with its URI; an embedded
 * binary resource is a file attachment. agentd checks the limits (SPEC.md §8) as for any turn.
 */
export function turnBodyOf(prompt: readonly ContentBlock[]): CreateTurn {
  const texts: string[] = [];
  const images: ImageAttachment[] = [];
  const files: FileAttachment[] = [];
  for (const block of prompt) {
    switch (block.type) {
      case 'text':
        texts.push(block.text);
        break;
      case 'image':
        images.push({ mimeType: block.mimeType as ImageAttachment['mimeType'], data: block.data });
        break;
      case 'resource_link':
        texts.push(`[${block.title ?? block.name}](${block.uri})`);
        break;
      case 'resource': {
        const resource = block.resource;
        if ('text' in resource) texts.push(`<resource uri="${resource.uri}">\n${resource.text}\n</resource>`);
        else files.push({ name: fileNameOf(resource.uri), mimeType: resource.mimeType ?? 'application/octet-stream', data: resource.blob });
        break;
      }
      case 'audio':
        throw new UnsupportedContent('audio prompts are not supported (promptCapabilities.audio is false)');
    }
  }
  return { input: texts.join('\n\n'), ...(images.length > 0 ? { images } : {}), ...(files.length > 0 ? { files } : {}) };
}

export class UnsupportedContent extends Error {}

function fileNameOf(uri: string): string {
  const last = uri.split(/[/\\]/).filter(Boolean).at(-1) ?? 'attachment';
  return decodeURIComponentSafely(last).slice(0, 255) || 'attachment';
}

function decodeURIComponentSafely(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
