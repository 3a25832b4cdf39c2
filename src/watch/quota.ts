/**
 * Concurrent watches per user (limits.watchesPerUser, env SVC_MAX_WATCHES_PER_USER or
 * GatewayOptions.limits): one count per gateway, shared by REST (WebSocket and ndjson) and
 * GraphQL subscriptions. The watch past the limit gets 429 until one of the user's watches
 * stops. Anonymous callers share the `anonymous` count.
 */
import { TooManyRequests } from '../errors/index.js';

export class WatchQuota {
  private readonly active = new Map<string, number>();

  constructor(private readonly limit: number) {}

  /** Takes a slot for `username` (429 when none is left); returns its release, which runs once. */
  acquire(username: string): () => void {
    const n = this.active.get(username) ?? 0;
    if (n >= this.limit) {
      throw new TooManyRequests(
        `user "${username}" has ${n} watches open; at most ${this.limit} are allowed (limit: concurrent watches per user)`,
        1,
      );
    }
    this.active.set(username, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.active.get(username) ?? 1) - 1;
      if (left > 0) this.active.set(username, left);
      else this.active.delete(username);
    };
  }
}
