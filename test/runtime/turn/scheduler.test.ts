import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Scheduler, type Job } from '../../../src/runtime/turn/scheduler.ts';

function recorder() {
  const started: string[] = [];
  const job = (tenantId: string, name: string): Job & { name: string } => ({ tenantId, name, start: () => started.push(name) });
  return { started, job };
}

describe('Scheduler', () => {
  it('runs up to the global limit and queues the rest in FIFO order', () => {
    const scheduler = new Scheduler({ maxRunning: 2, maxQueued: 10, maxRunningPerTenant: null, maxQueuedPerTenant: null });
    const { started, job } = recorder();
    const jobs = ['a', 'b', 'c', 'd'].map((name) => job('t', name));
    for (const entry of jobs) assert.equal(scheduler.enqueue(entry), 'queued');
    assert.deepEqual(started, ['a', 'b']);
    scheduler.finished(jobs[1]);
    assert.deepEqual(started, ['a', 'b', 'c']);
    scheduler.finished(jobs[0]);
    assert.deepEqual(started, ['a', 'b', 'c', 'd']);
    assert.deepEqual(scheduler.counts, { running: 2, queued: 0 });
  });

  it('hands a just-given slot to a job that was not queued; the first waits again at the head', () => {
    const scheduler = new Scheduler({ maxRunning: 1, maxQueued: 10, maxRunningPerTenant: 1, maxQueuedPerTenant: null });
    const { started, job } = recorder();
    const running = job('t', 'running');
    const waiting = [job('t', 'w1'), job('t', 'w2')];
    for (const entry of [running, ...waiting]) scheduler.enqueue(entry);
    scheduler.finished(running);
    assert.deepEqual(started, ['running', 'w1']);
    const older = job('t', 'older');
    scheduler.handOff(waiting[0], older);
    assert.deepEqual(started, ['running', 'w1', 'older']);
    assert.deepEqual(scheduler.counts, { running: 1, queued: 2 });
    assert.equal(scheduler.hasIdleSlot('t'), false);
    scheduler.finished(older);
    assert.deepEqual(started, ['running', 'w1', 'older', 'w1'], 'w1 goes before w2');
  });

  it('rejects at the global queue limit, not before', () => {
    const scheduler = new Scheduler({ maxRunning: 1, maxQueued: 2, maxRunningPerTenant: null, maxQueuedPerTenant: null });
    const { job } = recorder();
    assert.equal(scheduler.enqueue(job('t', 'running')), 'queued');
    assert.equal(scheduler.enqueue(job('t', 'q1')), 'queued');
    assert.equal(scheduler.enqueue(job('t', 'q2')), 'queued');
    assert.equal(scheduler.enqueue(job('t', 'q3')), 'queue_full');
  });

  it('rejects at the tenant queue limit and round-robins across tenants', () => {
    const scheduler = new Scheduler({ maxRunning: 1, maxQueued: 10, maxRunningPerTenant: 1, maxQueuedPerTenant: 2 });
    const { started, job } = recorder();
    const first = job('A', 'a0');
    scheduler.enqueue(first);
    const queued = [job('A', 'a1'), job('A', 'a2'), job('B', 'b1'), job('B', 'b2')];
    for (const entry of queued) assert.equal(scheduler.enqueue(entry), 'queued');
    assert.equal(scheduler.enqueue(job('A', 'a3')), 'tenant_queue_full');
    let current = first;
    const order = () => started[started.length - 1];
    for (let index = 0; index < 4; index++) {
      scheduler.finished(current);
      current = queued.find((entry) => entry.name === order())!;
    }
    assert.deepEqual(started, ['a0', 'a1', 'b1', 'a2', 'b2']);
  });

  it('does not let a tenant flooding its queue starve another: one slot, starts alternate across tenants', () => {
    const scheduler = new Scheduler({ maxRunning: 1, maxQueued: 100, maxRunningPerTenant: 1, maxQueuedPerTenant: 50 });
    const { started, job } = recorder();
    const jobs = new Map<string, Job & { name: string }>();
    const submit = (tenantId: string, name: string) => {
      const entry = job(tenantId, name);
      jobs.set(name, entry);
      assert.equal(scheduler.enqueue(entry), 'queued');
    };
    for (let index = 0; index < 8; index++) submit('A', `a${index}`);
    // B arrives after A's flood and still gets every other slot
    for (let index = 0; index < 3; index++) submit('B', `b${index}`);
    while (started.length < jobs.size) scheduler.finished(jobs.get(started.at(-1)!)!);
    assert.deepEqual(started, ['a0', 'a1', 'b0', 'a2', 'b1', 'a3', 'b2', 'a4', 'a5', 'a6', 'a7']);
    // a tenant arriving while the others are mid-rotation joins at the end of the rotation
    const late = new Scheduler({ maxRunning: 1, maxQueued: 100, maxRunningPerTenant: null, maxQueuedPerTenant: null });
    const lateOrder = recorder();
    const running = lateOrder.job('A', 'a0');
    late.enqueue(running);
    const queued = [lateOrder.job('A', 'a1'), lateOrder.job('A', 'a2'), lateOrder.job('B', 'b1'), lateOrder.job('C', 'c1'), lateOrder.job('A', 'a3')];
    for (const entry of queued) late.enqueue(entry);
    let current = running;
    for (let index = 0; index < queued.length; index++) {
      late.finished(current);
      current = queued.find((entry) => entry.name === lateOrder.started.at(-1))!;
    }
    assert.deepEqual(lateOrder.started, ['a0', 'a1', 'b1', 'c1', 'a2', 'a3']);
  });

  it('holds a tenant at its running limit while another tenant runs', () => {
    const scheduler = new Scheduler({ maxRunning: 3, maxQueued: 10, maxRunningPerTenant: 1, maxQueuedPerTenant: 5 });
    const { started, job } = recorder();
    scheduler.enqueue(job('A', 'a0'));
    scheduler.enqueue(job('A', 'a1'));
    scheduler.enqueue(job('B', 'b0'));
    assert.deepEqual(started, ['a0', 'b0']);
  });

  it('removes a queued job so it never starts', () => {
    const scheduler = new Scheduler({ maxRunning: 1, maxQueued: 10, maxRunningPerTenant: null, maxQueuedPerTenant: null });
    const { started, job } = recorder();
    const running = job('t', 'r');
    const cancelled = job('t', 'c');
    scheduler.enqueue(running);
    scheduler.enqueue(cancelled);
    assert.equal(scheduler.remove(cancelled), true);
    assert.equal(scheduler.remove(cancelled), false);
    scheduler.finished(running);
    assert.deepEqual(started, ['r']);
    assert.deepEqual(scheduler.counts, { running: 0, queued: 0 });
  });
});
