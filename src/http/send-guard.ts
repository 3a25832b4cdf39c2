/**
 * Slow WebSocket consumers on graphql-ws (issue 11 finding 4, transport part). graphql-ws sends
 * one message at a time and waits for `ws.send`'s callback, so a client that stops reading does
 * not grow the socket's buffer much: it stalls the subscription, whose events then pile up in
 * its queue, and the socket stays open for ever. This guard watches the sends instead: a socket
 * whose buffered amount exceeds `hardBufferBytes`, or whose sends have made no progress for
 * `drainMs` while data is waiting, is closed with 4503 ("the consumer fell too far behind") and
 * terminated a second later (a client that does not read never takes the close frame). The
 * socket's close ends its subscriptions, which frees their queues. (REST WebSocket and ndjson
 * watches have their own guard on the same settings: rest/watch-stream.ts.)
 */
import type { WebSocket } from 'ws';
import { watchSettings } from '../operations/index.js';

export const SLOW_CONSUMER_CLOSE = 4503;
const REASON = 'Too slow: the consumer fell too far behind';

type SendCallback = (err?: Error) => void;

export function guardSends(ws: WebSocket, onCut?: () => void): void {
  const send = ws.send.bind(ws) as (data: unknown, options: unknown, cb?: SendCallback) => void;
  let outstanding = 0;
  let stallTimer: NodeJS.Timeout | undefined;
  let cut = false;

  const cutOff = () => {
    if (cut) return;
    cut = true;
    if (stallTimer) clearTimeout(stallTimer);
    onCut?.();
    if (ws.readyState === ws.OPEN) ws.close(SLOW_CONSUMER_CLOSE, REASON);
    setTimeout(() => ws.terminate(), 1000).unref();
  };
  const arm = () => {
    if (stallTimer) clearTimeout(stallTimer);
    stallTimer = outstanding > 0 && !cut ? setTimeout(cutOff, watchSettings.drainMs) : undefined;
    stallTimer?.unref();
  };
  ws.once('close', () => {
    if (stallTimer) clearTimeout(stallTimer);
    stallTimer = undefined;
  });

  ws.send = ((data: unknown, options?: unknown, cb?: SendCallback) => {
    if (typeof options === 'function') {
      cb = options as SendCallback;
      options = {};
    }
    // After the cut nothing more is queued; the sender is told "done" so it does not report
    // an internal error for a socket that was closed on purpose.
    if (cut) return cb?.();
    outstanding++;
    if (outstanding === 1) arm();
    send(data, options ?? {}, (err?: Error) => {
      outstanding--;
      arm(); // progress: the stall clock starts again (or stops when nothing is waiting)
      cb?.(cut ? undefined : err);
    });
    if (ws.bufferedAmount > watchSettings.hardBufferBytes) cutOff();
  }) as WebSocket['send'];
}
