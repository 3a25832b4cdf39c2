/**
 * Rescue for a hang in the MongoDB driver (seen in 6.22, unchanged in 7.9): a command written to
 * a connection whose socket was destroyed before its 'close' event (a window of one event-loop
 * turn, e.g. right after the server was killed) never settles. `socket.write` on a destroyed
 * socket returns false without an 'error' event, the driver then waits for 'drain', which never
 * comes, and the connection's later cleanup does not fail that wait. When it hits the server
 * monitor's heartbeat, the monitor stops for good: the server stays "Unknown", its pool stays
 * paused and every operation fails until the process restarts (the outage test caught it). An
 * operation without a time bound of its own (feed polling) would hang the same way.
 *
 * Every `everyMs` this looks at the monitor's connections and the checked-out pool connections;
 * one the driver has already cleaned up (`closed`) whose socket is destroyed and still has a
 * 'drain' waiter gets that 'drain'. The waiting write returns, the driver sees the connection's
 * error and fails the command as a network error, so the monitor reconnects and an operation is
 * retried or fails normally. Live connections are never touched. It reads driver internals
 * defensively: if they change, it does nothing.
 */
import type { MongoClient } from 'mongodb';

interface DriverSocket {
  destroyed?: boolean;
  listenerCount?(event: string): number;
  emit?(event: string): boolean;
}
interface DriverConnection {
  closed?: boolean;
  socket?: DriverSocket;
}
interface DriverServer {
  monitor?: { connection?: DriverConnection | null; rttPinger?: { connection?: DriverConnection } };
  pool?: { checkedOut?: Iterable<DriverConnection> };
}

/** Releases stalled writes once; returns how many it released. */
export function releaseStalledWrites(client: MongoClient): number {
  const servers = (client as unknown as { topology?: { s?: { servers?: Map<string, DriverServer> } } }).topology?.s?.servers;
  if (!(servers instanceof Map)) return 0;
  let released = 0;
  for (const server of servers.values()) {
    const candidates: (DriverConnection | null | undefined)[] = [server.monitor?.connection, server.monitor?.rttPinger?.connection];
    const out = server.pool?.checkedOut;
    if (out && typeof out[Symbol.iterator] === 'function') candidates.push(...out);
    for (const c of candidates) {
      const s = c?.socket;
      if (!c?.closed || !s?.destroyed || typeof s.listenerCount !== 'function' || typeof s.emit !== 'function') continue;
      if (s.listenerCount('drain') > 0) {
        s.emit('drain');
        released++;
      }
    }
  }
  return released;
}

/** Runs `releaseStalledWrites` every `everyMs` until the returned function is called. */
export function watchStalledWrites(client: MongoClient, everyMs = 1000, onRelease?: (n: number) => void): () => void {
  const timer = setInterval(() => {
    try {
      const n = releaseStalledWrites(client);
      if (n > 0) onRelease?.(n);
    } catch {
      // internals changed: nothing to rescue
    }
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
