import type { TSchema } from 'typebox';
import {
  Agent, CreateSession, CreateTurn, ErrorEnvelope, ForkSession, HistoryPage, HumanRequest, Model, PatchSession,
  ResolveRequest, Session, SessionPage, Turn, TurnCompletion, TurnOutput, TurnResult,
} from './schemas.ts';
import { EventEnvelope } from './events.ts';

/**
 * The 17 named schemas of /openapi.json (SPEC.md §9): the resources of schemas.ts and the event
 * envelope of the catalogue, which is built on some of them and so lives in its own module.
 */
export const NAMED_SCHEMAS: Record<string, TSchema> = {
  Model, Session, SessionPage, CreateSession, PatchSession, ForkSession, CreateTurn, Turn, TurnResult,
  TurnOutput, TurnCompletion, Agent, HumanRequest, ResolveRequest, ErrorEnvelope, HistoryPage, EventEnvelope,
};
