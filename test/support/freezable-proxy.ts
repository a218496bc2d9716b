/**
 * A loopback TCP proxy in front of PostgreSQL that can cut one agentd off the way a partition does:
 * frozen, it stops forwarding in both directions without closing or resetting anything, so each
 * side's connection stays open and simply hears nothing (docs/CLUSTER.md "Partitions"). Unlike
 * SIGSTOP, the process behind it runs on: its timers fire, its queries wait.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { once } from 'node:events';

export interface FreezableProxy {
  /** `databaseUrl` with its host and port replaced by the proxy's */
  urlFor(databaseUrl: string): string;
  /** stops forwarding on every connection, new ones included (accepted, never connected onward) */
  freeze(): void;
  /** freezes every connection right after forwarding a message from the client that contains `text` */
  freezeAfter(text: string): void;
  thaw(): void;
  /** closes each of the next `count` connections as soon as it is accepted, as a server gone a moment does */
  cutNext(count: number): void;
  /** down: every open connection is cut and each new one closed as it is accepted, until it is up again */
  setDown(down: boolean): void;
  /** goes down at the first message from a client that contains `text`, which is not forwarded */
  downAt(text: string): void;
  /** how many connections the proxy has accepted */
  readonly accepted: number;
  readonly frozen: boolean;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  server: Socket;
}

export async function startFreezableProxy(targetHost = '127.0.0.1', targetPort = 5432): Promise<FreezableProxy> {
  const pairs = new Set<Pair>();
  let frozen = false;
  let freezeOn: string | null = null;
  let toCut = 0;
  let down = false;
  let downOn: string | null = null;
  let accepted = 0;
  const setDown = (value: boolean) => {
    down = value;
    if (!value) return;
    for (const { client, server: upstream } of pairs) {
      client.destroy();
      upstream.destroy();
    }
  };
  const setFrozen = (value: boolean) => {
    frozen = value;
    for (const { client, server } of pairs) for (const socket of [client, server]) value ? socket.pause() : socket.resume();
  };
  const server: Server = createServer((client) => {
    accepted++;
    if (down || toCut > 0) {
      if (!down) toCut--;
      client.destroy();
      return;
    }
    const upstream = connect(targetPort, targetHost);
    const pair = { client, server: upstream };
    pairs.add(pair);
    if (frozen) {
      client.pause();
      upstream.pause();
    }
    client.on('data', (chunk) => {
      if (downOn !== null && chunk.includes(downOn)) {
        downOn = null;
        return setDown(true);
      }
      upstream.write(chunk);
      if (freezeOn !== null && chunk.includes(freezeOn)) {
        freezeOn = null;
        setFrozen(true);
      }
    });
    upstream.on('data', (chunk) => client.write(chunk));
    const close = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', close);
    upstream.on('close', close);
    client.on('error', () => {});
    upstream.on('error', () => {});
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  return {
    urlFor(databaseUrl) {
      const url = new URL(databaseUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      return url.toString();
    },
    freeze: () => setFrozen(true),
    freezeAfter(text) {
      freezeOn = text;
    },
    thaw: () => setFrozen(false),
    cutNext(count) {
      toCut = count;
    },
    setDown,
    downAt(text) {
      downOn = text;
    },
    get accepted() {
      return accepted;
    },
    get frozen() {
      return frozen;
    },
    async close() {
      for (const { client, server: upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      pairs.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
