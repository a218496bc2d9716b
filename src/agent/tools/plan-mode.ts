/**
 * Tools through which the model talks to the human about planning: asking to enter plan mode,
 * presenting a plan to leave it, and asking a multiple-choice question. Each raises a HumanRequest
 * and tells the model, in its output, what the human decided. Entering and leaving plan mode is
 * reported as an effect; the agent loop owns the session's plan-mode state.
 */
import { Type } from 'typebox';
import { functionTool } from './arguments.ts';
import { success, ToolError } from './types.ts';

/** A HumanRequest carries at most 100 options; `custom` is always the last one. */
const MAX_QUESTION_OPTIONS = 99;

export const enterPlanModeTool = functionTool({
  name: 'enter_plan_mode',
  description:
    'Asks the user to switch to plan mode: only read-only tools until you present a plan with ' +
    'exit_plan_mode and the user approves it. Use it before large or risky changes.',
  arguments: Type.Object({ reason: Type.String({ minLength: 1, description: 'why planning first helps' }) }, { additionalProperties: false }),
  plan: () => ({ readOnly: true, paths: [] }),
  async run(args, ctx) {
    if (ctx.planMode) return success('You are already in plan mode.');
    const prompt = `The agent asks to switch to plan mode (read-only tools until you approve its plan).\n\nReason: ${args.reason}`;
    const { decision } = await ctx.requestHuman('plan_enter', prompt, ['enter', 'stay']);
    if (decision === 'enter') {
      return success(
        'The user agreed: you are now in plan mode. Only read-only tools are available. Investigate, ' +
          'then present your plan with exit_plan_mode.',
        false,
        { planMode: 'enter' },
      );
    }
    return success('The user declined plan mode. Continue without it.');
  },
});

export const exitPlanModeTool = functionTool({
  name: 'exit_plan_mode',
  description:
    'Presents your plan to the user and asks to leave plan mode and carry it out. The user may ' +
    'approve it, ask for changes (you receive their feedback), or cancel.',
  arguments: Type.Object({ plan: Type.String({ minLength: 1, description: 'the complete plan, in Markdown' }) }, { additionalProperties: false }),
  plan: () => ({ readOnly: true, paths: [] }),
  async run(args, ctx) {
    const prompt = `The agent proposes this plan and asks to leave plan mode and carry it out:\n\n${args.plan}`;
    const { decision, value } = await ctx.requestHuman('plan_exit', prompt, ['approve', 'request_changes', 'cancel']);
    if (decision === 'approve') {
      return success('The user approved the plan. Plan mode is over: carry the plan out now.', false, { planMode: 'exit' });
    }
    if (decision === 'request_changes') {
      const feedback = value?.trim() ? value : '(no details given)';
      return success(
        `The user asked for changes to the plan. Stay in plan mode, revise the plan and present it ` +
          `again with exit_plan_mode. Their feedback:\n${feedback}`,
      );
    }
    return success('The user cancelled the plan. Do not carry it out; stay in plan mode and wait for their next message.');
  },
});

export interface QuestionArgs {
  question: string;
  options: string[];
}

export const askQuestionTool = functionTool({
  name: 'ask_question',
  description:
    'Asks the user a question with a few suggested answers; they may also answer in their own ' +
    'words. Use it when a decision is theirs to make.',
  arguments: Type.Object(
    {
      question: Type.String({ minLength: 1 }),
      options: Type.Array(Type.String(), { maxItems: MAX_QUESTION_OPTIONS }),
    },
    { additionalProperties: false },
  ),
  refine(args): QuestionArgs {
    const options = args.options.map((option) => option.trim());
    if (options.some((option) => option === '')) throw new ToolError('options must not be empty strings');
    if (new Set(options).size !== options.length) throw new ToolError('options must be distinct');
    if (options.includes('custom')) throw new ToolError('"custom" is reserved for the user\'s own answer; do not offer it');
    return { question: args.question, options };
  },
  plan: () => ({ readOnly: true, paths: [] }),
  async run(args, ctx) {
    const { decision, value } = await ctx.requestHuman('plan_question', args.question, [...args.options, 'custom']);
    if (decision === 'custom') {
      if (!value?.trim()) return success('The user chose to answer in their own words but left the answer empty.');
      return success(`The user answered in their own words:\n${value}`);
    }
    return success(`The user chose: ${decision}`);
  },
});
