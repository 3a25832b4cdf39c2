/**
 * The response limit (docs/API.md §4, §5; LIMITS.responseBytes, 32 MiB): the objects one
 * response carries, in serialised bytes, for every REST list (with or without `size`) and for
 * every GraphQL operation as a whole, so 20 aliases of one list field share one budget. Over it
 * the request is refused with 400 / `BAD_REQUEST` naming the limit, never a 5xx.
 *
 * The budget is spent as objects are read, before any answer is built. The reads of one budget
 * run one after another (`read`): a GraphQL operation's sibling list fields would otherwise all
 * read at once, and the memory would be spent before the first of them could be counted. Once
 * spent, every later read of the operation is refused without touching the store. (One read is
 * still a whole page of the store: at most `size` objects of at most LIMITS.objectBytes each.)
 */
import { BadRequest } from '../errors/index.js';
import { LIMITS } from '../limits.js';

export class ResponseBudget {
  /** Bytes of the objects measured so far. */
  private measured = 0;
  /** Objects counted but not measured yet, and the most they can weigh (objectBytes each). */
  private pending: unknown[] = [];
  private pendingBound = 0;
  private queue: Promise<unknown> = Promise.resolve();
  private refusal: BadRequest | undefined;

  constructor(
    readonly limit: number = LIMITS.responseBytes,
    private readonly objectBytes: number = LIMITS.objectBytes,
  ) {}

  /** The refusal, once the budget has been overspent (a GraphQL operation then answers only it). */
  get exceeded(): BadRequest | undefined {
    return this.refusal;
  }

  /** Runs `read` after every earlier read of this budget, unless the budget is already spent. */
  read<T>(read: () => Promise<T>): Promise<T> {
    const next = this.queue.then(() => {
      if (this.refusal) throw this.refusal;
      return read();
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  /**
   * Counts objects about to be answered; throws the refusal when they do not fit. Objects are
   * measured (serialised) only once the most they can weigh together (each stored object is at
   * most objectBytes) could pass the limit: a get or a short page costs no serialisation, and the
   * count stays exact.
   */
  spend(objects: readonly unknown[]): void {
    if (this.refusal) throw this.refusal;
    for (const o of objects) this.pending.push(o);
    this.pendingBound += objects.length * this.objectBytes;
    if (this.measured + this.pendingBound <= this.limit) return;
    const pending = this.pending;
    this.pending = [];
    this.pendingBound = 0;
    for (const o of pending) {
      this.measured += Buffer.byteLength(JSON.stringify(o) ?? '');
      if (this.measured > this.limit) {
        this.refusal = new BadRequest(
          `the response would exceed ${this.limit} bytes (limit: response size); ask for fewer objects: ` +
            'REST size and page, or limit and continue; GraphQL size, or first on a connection',
        );
        throw this.refusal;
      }
    }
  }
}

/**
 * Runs one read of `ctx`'s budget (or of a budget of its own for a REST request) and counts the
 * objects it answers (`answered`) against the response limit of `entry`'s gateway.
 */
export function readWithin<T>(
  ctx: { budget?: ResponseBudget },
  limits: { responseBytes: number; objectBytes: number },
  read: () => Promise<T>,
  answered: (result: T) => readonly unknown[],
): Promise<T> {
  const budget = ctx.budget ?? new ResponseBudget(limits.responseBytes, limits.objectBytes);
  return budget.read(async () => {
    const result = await read();
    const objects = answered(result);
    budget.spend(objects);
    return result;
  });
}
