import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { BACKENDS, createBackend } from '../support/backends.ts';
import { openStore } from '../../src/store/database.ts';
import { EventHub } from '../../src/runtime/event-hub.ts';

for (const backend of BACKENDS) {
  describe(`event ids on ${backend}`, () => {
    it('never repeat after a restart, even past the first reserved block of ids', async () => {
      const test = await createBackend(backend);
      const options = { databaseUrl: test.databaseUrl, stateDir: test.stateDir };
      try {
        const first = await openStore(options);
        const hub = await EventHub.open(first.db, 'default', 10, pino({ level: 'silent' }));
        let last = 0;
        // more than one block: the ceiling has to be extended durably while events flow
        for (let index = 0; index < 10_000; index++) {
          last = hub.emit('warning', null, null, { text: 'x', truncated: false }).id;
          if (index % 1000 === 0) await hub.flush();
        }
        await hub.flush();
        await first.close();

        const second = await openStore(options);
        const reopened = await EventHub.open(second.db, 'default', 10, pino({ level: 'silent' }));
        const next = reopened.emit('warning', null, null, { text: 'y', truncated: false }).id;
        assert.ok(next > last, `first id after the restart (${next}) is above the last one before it (${last})`);
        await reopened.flush();
        await second.close();
      } finally {
        await test.drop();
      }
    });
  });
}
