/** `update_plan`: the model records its step list; the agent loop publishes it from the outcome's effects. */
import { optionalString, parseJsonArguments } from './arguments.ts';
import { success, ToolError, type PlanStepStatus, type PlanUpdate, type Tool } from './types.ts';

const STATUSES: readonly PlanStepStatus[] = ['pending', 'in_progress', 'completed'];
const MAX_STEPS = 100;

export const updatePlanTool: Tool<PlanUpdate> = {
  name: 'update_plan',
  kind: 'function',
  description:
    'Records your plan as a list of short steps, each pending, in_progress or completed. ' +
    'At most one step is in_progress at a time. Call it again whenever a step changes status.',
  parameters: {
    type: 'object',
    properties: {
      explanation: { type: 'string' },
      plan: {
        type: 'array',
        items: {
          type: 'object',
          properties: { step: { type: 'string' }, status: { type: 'string', enum: STATUSES } },
          required: ['step', 'status'],
          additionalProperties: false,
        },
      },
    },
    required: ['plan'],
    additionalProperties: false,
  },
  parse(input) {
    const args = parseJsonArguments(input, ['explanation', 'plan']);
    if (!Array.isArray(args.plan)) throw new ToolError('"plan" must be an array of {step, status}');
    if (args.plan.length > MAX_STEPS) throw new ToolError(`"plan" may have at most ${MAX_STEPS} steps`);
    const steps = args.plan.map((item: unknown, index: number) => {
      const entry = item as { step?: unknown; status?: unknown };
      if (typeof item !== 'object' || item === null || typeof entry.step !== 'string' || entry.step.trim() === '') {
        throw new ToolError(`plan[${index}].step must be a non-empty string`);
      }
      if (!STATUSES.includes(entry.status as PlanStepStatus)) {
        throw new ToolError(`plan[${index}].status must be one of ${STATUSES.join(', ')}`);
      }
      return { step: entry.step, status: entry.status as PlanStepStatus };
    });
    if (steps.filter((step) => step.status === 'in_progress').length > 1) {
      throw new ToolError('at most one step can be in_progress');
    }
    return { explanation: optionalString(args, 'explanation') ?? null, steps };
  },
  plan: () => ({ readOnly: true, paths: [] }),
  run: async (args) => success('Plan updated', false, { plan: args }),
};
