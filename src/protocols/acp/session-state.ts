import type { SessionConfigOption, SessionModeState } from '@agentclientprotocol/sdk';
import type { Model, Session } from '../../client/index.ts';

/** ACP's session modes are agentd's plan mode: `plan` (read-only tools) or `default`. */
export const PLAN_MODE = 'plan';
export const DEFAULT_MODE = 'default';

export function modesOf(session: Session): SessionModeState {
  return {
    currentModeId: session.planMode ? PLAN_MODE : DEFAULT_MODE,
    availableModes: [
      { id: DEFAULT_MODE, name: 'Default', description: 'every tool, behind the approval policy' },
      { id: PLAN_MODE, name: 'Plan', description: 'read-only tools until a plan is approved' },
    ],
  };
}

/** The session's model (any of the catalog) and effort (those its model accepts), as ACP select options. */
export function configOptionsOf(session: Session, models: readonly Model[]): SessionConfigOption[] {
  const model = models.find((candidate) => candidate.id === session.model);
  const modelChoices = models.map((candidate) => ({ value: candidate.id, name: candidate.label ?? candidate.id, description: `${candidate.dialect} via ${candidate.connection}` }));
  if (!model) modelChoices.unshift({ value: session.model, name: session.model, description: 'no longer in the catalog' });
  const efforts = model?.efforts ?? [session.effort];
  return [
    { id: 'model', name: 'Model', category: 'model', type: 'select', currentValue: session.model, options: modelChoices },
    { id: 'effort', name: 'Effort', category: 'thought_level', type: 'select', currentValue: session.effort, options: efforts.map((effort) => ({ value: effort, name: effort })) },
  ];
}
