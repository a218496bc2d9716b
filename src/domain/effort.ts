/** How much a model may reason before it answers, from none to the most a provider offers. */
export const EFFORTS = ['none', 'low', 'medium', 'high', 'xhigh', 'max'] as const;
export type Effort = (typeof EFFORTS)[number];
