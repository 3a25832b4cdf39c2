/**
 * Slow WebSocket consumers on graphql-ws.
 *
 * graphql-ws sends one message at a time and waits for `ws.send`'s callback before taking the
 * next event of a subscription, so a client that stops reading never grows the socket's
 * `bufferedAmount` beyond one message: the socket's send path stalls, the subscription's events
 * pile up in its queue (bounded by the GraphQL layer, 1,000 events → ERROR), and the socket
 * stays open until graphql-ws's keep-alive gives up on it. A buffer check like the REST
 * transports' (rest/watch.ts) would never fire, so this guard watches progress instead:
 * a socket whose sends have made no progress for `drainMs` while data waits, or that has more
 * than `hardBufferBytes` waiting when another message is queued, is closed with 4503 (the
 * gateway's own code: the consumer fell too far behind) and terminated a second later (a client
 * that does not read never takes the close frame). The socket's close ends its operations,
 * which frees their queues.
 */
import type { WebSocket } from 'ws';
import { closeCodeOf } from '../errors/http.js';

/** The close code of a cut slow consumer (the gateway's own; docs/API.md names none for this). */
export const SLOW_CONSUMER_CLOSE = closeCodeOf(503);
const REASON = 'Too slow: the consumer fell too far behind';

export interface SendGuardSettings {
  /** A socket whose sends made no progress for this long while data waits is closed (4503). */
  drainMs: number;
  /** A socket with more than this many bytes waiting when another message is queued is closed at once (4503). */
  hardBufferBytes: number;
  /** After the close frame, the socket is terminated this much later. */
  terminateMs: number;
}

/** The defaults; each gateway holds its own copy (its WatchHub's `sendGuard`). */
export const SEND_GUARD_DEFAULTS: Readonly<SendGuardSettings> = Object.freeze({ drainMs: 5000, hardBufferBytes: 8 << 20, terminateMs: 1000 });

const byteLength = (data: string | Buffer): number => (typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength);

/**
 * The guarded way to send on one socket: resolves when ws has handed the message on (rejects
 * with its error), at once when the socket is not open or was cut off. `onCut` is called once
 * when the socket is cut off.
 *
 * Progress is counted in bytes handed to the kernel (`bufferedAmount` going down), not in whole
 * messages, so a client on a slow link that takes a large query result over many seconds is not
 * cut while it reads. The 8 MiB bound applies to what is already waiting when another message
 * is queued: one large result alone never trips it.
 */
export function guardedSender(
  ws: WebSocket,
  settings: Readonly<SendGuardSettings> = SEND_GUARD_DEFAULTS,
  onCut?: () => void,
): (data: string | Buffer) => Promise<void> {
  const { drainMs, hardBufferBytes, terminateMs } = settings;
  /** Sends whose callback has not come yet (graphql-ws: at most one per operation). */
  let outstanding = 0;
  let stallTimer: NodeJS.Timeout | undefined;
  let cut = false;
  /** `bufferedAmount` when the stall clock last started, and the bytes queued since. */
  let mark = 0;
  let added = 0;

  const cutOff = () => {
    if (cut) return;
    cut = true;
    if (stallTimer) clearTimeout(stallTimer);
    stallTimer = undefined;
    onCut?.();
    if (ws.readyState === ws.OPEN) ws.close(SLOW_CONSUMER_CLOSE, REASON);
    setTimeout(() => ws.terminate(), terminateMs).unref();
  };
  const startClock = () => {
    mark = ws.bufferedAmount;
    added = 0;
    stallTimer = setTimeout(check, drainMs);
    stallTimer.unref();
  };
  /** Every `drainMs` while sends wait: cut unless some bytes left the buffer since the last look. */
  const check = () => {
    stallTimer = undefined;
    if (cut || outstanding === 0) return;
    if (mark + added - ws.bufferedAmount > 0) return startClock();
    cutOff();
  };
  ws.once('close', () => {
    if (stallTimer) clearTimeout(stallTimer);
    stallTimer = undefined;
  });

  return (data) =>
    new Promise<void>((resolve, reject) => {
      if (ws.readyState !== ws.OPEN) return resolve();
      // After the cut nothing more is queued; the sender is told "done" so that it drains its
      // queues at once instead of reporting an error for a socket closed on purpose.
      if (cut) return resolve();
      if (outstanding > 0 && ws.bufferedAmount > hardBufferBytes) {
        cutOff();
        return resolve();
      }
      if (outstanding === 0 && !stallTimer) startClock();
      outstanding++;
      added += byteLength(data);
      ws.send(data, (err?: Error) => {
        outstanding--;
        if (outstanding === 0 && stallTimer) {
          clearTimeout(stallTimer);
          stallTimer = undefined;
        }
        if (err && !cut) reject(err);
        else resolve();
      });
    });
}
