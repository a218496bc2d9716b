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
}

export interface Peer {
  /** the table's column, with the version */
  readonly name: string;
  /** Starts the server on a loopback port with fresh state, its model the fake at `fakeModelBaseUrl` (…/v1). */
  start(fakeModelBaseUrl: string, scratch: string): Promise<RunningPeer>;
}
