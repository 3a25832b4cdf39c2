/**
 * graphql-ws sessions end when their credentials stop holding (docs/API.md §2): a revoked or
 * expired token, a disabled, deleted or re-passworded user. The caller of a socket is resolved
 * once, at connection time, so it is checked again
 *   - before each operation (a mutation sent after the revocation is never executed), and
 *   - every `intervalMs()` for every open socket (an idle socket, or one running only
 *     subscriptions, is closed too, also when the change came through another gateway).
 * Such a socket is closed with 4401 (as a connection refused for bad credentials); the watch
 * streams of its subscriptions end with it. `Session.check` reads the store only when the
 * security generation moved, so the periodic check costs nothing while nothing changes.
 */
import { GraphQLError } from 'graphql';
import type { WebSocket } from 'ws';
import { Unauthenticated } from '../errors/index.js';
import type { Caller, Session } from '../identity/caller.js';
import { connectionRefusal } from './errors.js';

export class SessionGuard {
  private readonly open = new Map<WebSocket, Session>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly intervalMs: () => number) {}

  /** Follows the socket of an acknowledged connection (callers without credentials have nothing to check). */
  track(socket: WebSocket, caller: Caller): void {
    if (!caller.session) return;
    this.open.set(socket, caller.session);
    this.schedule();
  }

  untrack(socket: WebSocket): void {
    this.open.delete(socket);
  }

  /**
   * Before an operation: undefined while the credentials hold; once they do not, the socket is
   * closed and the errors to answer the operation with are returned.
   */
  async refusal(socket: WebSocket, caller: Caller): Promise<readonly GraphQLError[] | undefined> {
    const { session } = caller;
    if (!session || (await this.holds(socket, session))) return undefined;
    return [new GraphQLError('The credentials of this session were revoked.', { extensions: { code: 'UNAUTHENTICATED' } })];
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.open.clear();
  }

  /** False (and the socket closed with 4401) once the session's credentials no longer hold. */
  private async holds(socket: WebSocket, session: Session): Promise<boolean> {
    try {
      await session.check();
      return true;
    } catch (err) {
      // Only a verdict ends a session; a store that cannot answer now is asked again later.
      if (!(err instanceof Unauthenticated)) return true;
      this.open.delete(socket);
      const { code, reason } = connectionRefusal(err);
      socket.close(code, reason);
      return false;
    }
  }

  private schedule(): void {
    if (this.timer || this.open.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void Promise.all([...this.open].map(([socket, session]) => this.holds(socket, session))).finally(() => this.schedule());
    }, this.intervalMs());
    this.timer.unref();
  }
}
