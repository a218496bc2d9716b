// The relay of a cluster's event stream follows the stream only while its log is watched
// (runtime/event-relay.ts): an instance nobody subscribes to reads none of the others' events, and
// a subscriber that comes later, with or without Last-Event-ID, still gets every event once, in
// order. Two relays on two connection pools of a real PostgreSQL database, with its doorbell.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { createBackend, type TestBackend } from '../support/backends.ts';
import { openStore, type Store } from '../../src/store/database.ts';
import { EventRelay } from '../../src/runtime/event-relay.ts';
import { EventLog } from '../../src/events/event-log.ts';
import { ClusterSupervisor, type ClusterDuties } from '../../src/runtime/cluster-supervisor.ts';

const BOUNDARY = 'following';
const REPLAY_LIMIT = 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const supervisors: ClusterSupervisor[] = [];
const boundaries: ClusterDuties[] = [];

/** An instance's relay, run by a supervisor of its own (its poll every 500 ms), with its database's doorbell. */
async function openRelay(store: Store, instanceId: string): Promise<EventRelay> {
  const supervisor = new ClusterSupervisor({ instanceId, logger: pino({ level: 'silent' }) });
  const duties = supervisor.boundary(store.doorbell);
  supervisors.push(supervisor);
  boundaries.push(duties);
  return EventRelay.open(
    { db: store.db, boundaryId: BOUNDARY, replayLimit: REPLAY_LIMIT, duties, logger: pino({ level: 'silent' }) },
    (firstId) => new EventLog({ replayLimit: REPLAY_LIMIT, firstId }),
  );
}

/** The ids of the `warning` frames a subscriber was written. */
function subscribe(relay: EventRelay, lastEventId: number | null): { ids: number[]; close(): void } {
  const ids: number[] = [];
  const subscription = relay.log.subscribe(lastEventId, {
    write(frame) {
      const id = /^id: (\d+)$/m.exec(frame)?.[1];
      if (id && frame.includes('event: warning')) ids.push(Number(id));
      return true;
    },
    onDrain() {},
  });
  return { ids, close: () => subscription.close() };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (const deadline = Date.now() + 10_000; !condition(); await sleep(20)) if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
}

describe('a cluster relay follows the stream only while its log is watched', () => {
  let backend: TestBackend;
  let alphaStore: Store;
  let betaStore: Store;
  let alpha: EventRelay;
  let beta: EventRelay;
  const publish = (count: number) => {
    for (let index = 0; index < count; index++) alpha.publish('warning', { data: { text: `w${index}`, truncated: false } });
  };
  before(async () => {
    backend = await createBackend('postgres');
    alphaStore = await openStore({ databaseUrl: backend.databaseUrl, stateDir: backend.stateDir });
    betaStore = await openStore({ databaseUrl: backend.databaseUrl, stateDir: backend.stateDir, migrate: false });
    alpha = await openRelay(alphaStore, 'alpha');
    beta = await openRelay(betaStore, 'beta');
  });
  after(async () => {
    await alpha.close();
    await beta.close();
    for (const duties of boundaries) await duties.close();
    for (const supervisor of supervisors) supervisor.close();
    await alphaStore.close();
    await betaStore.close();
    await backend.drop();
  });

  it('nobody subscribed: the other instance\'s events are not read, through rings and polls alike', async () => {
    const watched = subscribe(alpha, null);
    publish(40);
    await until(() => watched.ids.length === 40, 'alpha stores and shows its events');
    watched.close();
    // the doorbell rang, and the 500 ms poll came round twice
    await sleep(1_200);
    assert.equal(beta.log.newestId, 0);
  });

  it('a subscriber with Last-Event-ID gets what it missed once, in order, and then what comes live', async () => {
    await beta.catchUp(10);
    const resumed = subscribe(beta, 10);
    assert.deepEqual(resumed.ids, Array.from({ length: 30 }, (_, index) => 11 + index));
    publish(5);
    await until(() => resumed.ids.length === 35, 'the live events reach the subscriber on the other instance');
    assert.deepEqual(resumed.ids.slice(30), [41, 42, 43, 44, 45]);
    resumed.close();
  });

  it('a subscriber without Last-Event-ID starts after the newest stored event, even on a log that was behind', async () => {
    // beta unwatched again: alpha's next events are not read
    await sleep(5_200);
    publish(3);
    await sleep(800);
    assert.equal(beta.log.newestId, 45, 'unwatched, the log stayed where its last subscriber left it');
    await beta.catchUp(null);
    const live = subscribe(beta, null);
    publish(2);
    await until(() => live.ids.length === 2, 'the new events arrive');
    assert.deepEqual(live.ids, [49, 50]);
    live.close();
  });
});
