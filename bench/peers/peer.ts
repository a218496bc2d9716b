/**
 * What the peer benchmark needs from each server, in its own API's words: the same operations
 * (a session or thread: create, get, list; a turn; a stream of a turn's events) behind one shape.
 */
import type { HttpClient } from '../support/http-client.ts';
import type { ServerProcess } from './server-process.ts';

/** A request wrk repeats: a GET of `path`, or a POST of `postJson` to it. */
export interface LoadTarget {
  path: string;
  postJson?: unknown;
}

/** A turn whose events subscribers can follow: they connect to `subscribePath`, then `run()` plays it to its end. */
interface StreamingTurn {
  subscribePath: string;
  run(): Promise<void>;
}

/**
 * A turn streamed live to a watcher of its own (the capacity ladder, bench/peers/capacity.ts):
 * the watcher subscribes to `subscribePath`, then `start` sends the turn.
 */
interface LiveTurn {
  subscribePath: string;
  /** the path streams every session's events (a global stream): the watcher keeps the frames naming its session */
  sharedStream: boolean;
  /** Sends the turn; resolves once the peer has taken it, or, with `endsWhenStarted`, once the turn has ended. */
  start(client: HttpClient): Promise<void>;
  endsWhenStarted: boolean;
}

export interface TurnRunner {
  /** Sends `input` as a user turn and resolves once the turn has ended. */
  runTurn(sessionId: string, input: string): Promise<void>;
  close(): Promise<void>;
}

export interface RunningPeer extends ServerProcess {
  /** http://127.0.0.1:PORT */
  readonly url: string;
  createSession(client: HttpClient): Promise<string>;
  getSession(sessionId: string): LoadTarget;
  /** a page of 50 of the sessions there are */
  listSessions: LoadTarget;
  /** how many sessions one list request returns (the peer may not page) */
  countListed(client: HttpClient): Promise<number>;
  createSessionLoad: LoadTarget;
  openTurnRunner(client: HttpClient): Promise<TurnRunner>;
  /** Creates a turn to be streamed, not yet running (or not yet producing events). */
  prepareStreamingTurn(client: HttpClient, sessionId: string, input: string): Promise<StreamingTurn>;
  /** Frames every subscriber gets for itself (greetings, heartbeats), left out of the loss count. */
  isOwnFrame(event: string | undefined, data: string): boolean;
  /** A turn for the capacity ladder, one of `liveTurns` streaming at once. */
  prepareLiveTurn(client: HttpClient, sessionId: string, input: string, liveTurns: number): Promise<LiveTurn>;
  /** The frame that ends a live turn on its stream, where the peer sends one. */
  isTurnEnd(event: string | undefined, data: string): boolean;
  /** A frame that carries the reply's text as it streams (not a title or a summary that quotes it). */
  isTextDelta(event: string | undefined, data: string): boolean;
}

export interface Peer {
  /** the table's column, with the version */
  readonly name: string;
  /**
   * Starts the server on a loopback port with fresh state, its model the fake at `fakeModelBaseUrl`
   * (…/v1). With `liveTurns`, its limits are set so that many turns can stream at once, as an
   * operator sizing it for that load would.
   */
  start(fakeModelBaseUrl: string, scratch: string, liveTurns?: number): Promise<RunningPeer>;
}
