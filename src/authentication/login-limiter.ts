/**
 * Failed-login limits (docs/API.md §2). A failure is counted per (username, client address) and
 * per client address within a sliding window:
 *   - 10 failures for one pair within 60 s → every further attempt of that pair gets 429,
 *   - 100 failures from one address within 60 s → every further login attempt from it gets 429,
 * each with `Retry-After` until the failures that caused it leave the window. Below the limits
 * nothing is delayed; successes are never counted.
 *
 * Password checks still running count as failures until they end (`attempt`): of any number of
 * concurrent guesses for one pair, at most 10 reach the (slow) password check, since a limit
 * checked only before the check and counted only after it lets a burst through whole.
 */
import { TooManyRequests } from '../errors/index.js';

export interface LoginLimits {
  perUser: number;
  perAddress: number;
  windowMs: number;
}

export const DEFAULT_LOGIN_LIMITS: LoginLimits = { perUser: 10, perAddress: 100, windowMs: 60_000 };

/** Recent failure times of one key, oldest first, at most `limit` kept. */
class Failures {
  private readonly map = new Map<string, number[]>();
  constructor(private readonly limit: number, private readonly windowMs: number) {}

  /** Milliseconds until the key may try again, or 0, with `pending` attempts still being checked. */
  blockedFor(key: string, now: number, pending = 0): number {
    const limit = this.limit - pending;
    if (limit <= 0) return PENDING_WAIT_MS;
    const times = this.map.get(key);
    if (!times || times.length < limit) return 0;
    const until = times[times.length - limit]! + this.windowMs;
    return until > now ? until - now : 0;
  }

  add(key: string, now: number): void {
    let times = this.map.get(key);
    if (!times) this.map.set(key, (times = []));
    times.push(now);
    if (times.length > this.limit) times.shift();
  }

  prune(now: number): void {
    for (const [key, times] of this.map) if (times[times.length - 1]! + this.windowMs <= now) this.map.delete(key);
  }

  get size(): number {
    return this.map.size;
  }
}

const PRUNE_AT = 10_000;
/** Retry-After of an attempt refused while the attempts before it are still being checked. */
const PENDING_WAIT_MS = 1000;

/** Counts of attempts still being checked, per key. */
class Pending {
  private readonly map = new Map<string, number>();
  get = (key: string) => this.map.get(key) ?? 0;
  add(key: string): void {
    this.map.set(key, this.get(key) + 1);
  }
  remove(key: string): void {
    const n = this.get(key) - 1;
    if (n > 0) this.map.set(key, n);
    else this.map.delete(key);
  }
}

export class LoginLimiter {
  private readonly pairs: Failures;
  private readonly addresses: Failures;
  private readonly pendingPairs = new Pending();
  private readonly pendingAddresses = new Pending();

  constructor(
    readonly limits: LoginLimits = DEFAULT_LOGIN_LIMITS,
    private readonly now: () => number = Date.now,
  ) {
    this.pairs = new Failures(limits.perUser, limits.windowMs);
    this.addresses = new Failures(limits.perAddress, limits.windowMs);
  }

  /** Throws 429 when this login attempt is over a limit (attempts still being checked count). */
  check(username: string, address: string): void {
    const now = this.now();
    const pair = pairKey(username, address);
    const wait = Math.max(
      this.addresses.blockedFor(address, now, this.pendingAddresses.get(address)),
      this.pairs.blockedFor(pair, now, this.pendingPairs.get(pair)),
    );
    if (wait > 0) throw new TooManyRequests('too many failed login attempts; try again later', Math.ceil(wait / 1000));
  }

  /**
   * Starts a password check: 429 when over a limit, else the attempt counts as a failure until
   * `done` is called (once), with whether it failed.
   */
  attempt(username: string, address: string): (failed: boolean) => void {
    this.check(username, address);
    const pair = pairKey(username, address);
    this.pendingPairs.add(pair);
    this.pendingAddresses.add(address);
    let open = true;
    return (failed) => {
      if (!open) return;
      open = false;
      this.pendingPairs.remove(pair);
      this.pendingAddresses.remove(address);
      if (failed) this.fail(username, address);
    };
  }

  fail(username: string, address: string): void {
    const now = this.now();
    this.pairs.add(pairKey(username, address), now);
    this.addresses.add(address, now);
    if (this.pairs.size > PRUNE_AT) this.pairs.prune(now);
    if (this.addresses.size > PRUNE_AT) this.addresses.prune(now);
  }
}

const pairKey = (username: string, address: string) => `${address}\u0000${username}`;
