/** `update_plan`: the model records its step list; the agent loop publishes it from the outcome's effects. */
import { Type } from 'typebox';
import { functionTool, NON_BLANK } from './arguments.ts';
import { success, ToolError, type PlanStepStatus, type PlanUpdate } from './types.ts';

const STATUSES = ['pending', 'in_progress', 'completed'] as const satisfies readonly PlanStepStatus[];
const MAX_STEPS = 100;

export const updatePlanTool = functionTool({
  name: 'update_plan',
  description:
    'Records your plan as a list of short steps, each pending, in_progress or completed. ' +
    'At most one step is in_progress at a time. Call it again whenever a step changes status.',
  arguments: Type.Object(
    {
      explanation: Type.Optional(Type.String()),
      plan: Type.Array(
        Type.Object({ step: Type.String({ pattern: NON_BLANK }), status: Type.Enum(STATUSES) }, { additionalProperties: false }),
        { maxItems: MAX_STEPS },
      ),
    },
    { additionalProperties: false },
  ),
  refine(args): PlanUpdate {
    if (args.plan.filter((step) => step.status === 'in_progress').length > 1) throw new ToolError('at most one step can be in_progress');
    return { explanation: args.explanation ?? null, steps: args.plan.map(({ step, status }) => ({ step, status })) };
  },
  plan: () => ({ readOnly: true, paths: [] }),
  run: async (args) => success('Plan updated', false, { plan: args }),
});
