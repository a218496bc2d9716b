/** The wire dialects a model connection speaks; each has one provider adapter. */
export const DIALECTS = ['openai-responses', 'anthropic-messages', 'openai-chat'] as const;

export type Dialect = (typeof DIALECTS)[number];
