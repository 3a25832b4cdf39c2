/**
 * A push-to-pull bridge: callbacks push values, a subscription pulls them as an AsyncIterator.
 * Closing (consumer `return()`, `end()`, overflow) runs the teardown once.
 */

export interface EventStream<T> extends AsyncIterableIterator<T> {
  push(value: T): void;
  /** Ends the stream after the values already queued. */
  end(): void;
  /** Registers the teardown; runs at once when the stream is already closed. */
  onClose(teardown: () => void): void;
}

export function createEventStream<T>(opts: { maxQueued?: number; onOverflow?: () => T } = {}): EventStream<T> {
  const maxQueued = opts.maxQueued ?? 10_000;
  const queue: T[] = [];
  const waiting: ((r: IteratorResult<T>) => void)[] = [];
  let ended = false;
  let closed = false;
  let teardown: (() => void) | undefined;

  const close = () => {
    if (closed) return;
    closed = true;
    ended = true;
    const t = teardown;
    teardown = undefined;
    t?.();
  };

  const flushDone = () => {
    while (waiting.length) waiting.shift()!({ value: undefined, done: true });
  };

  const stream: EventStream<T> = {
    push(value) {
      if (ended) return;
      const next = waiting.shift();
      if (next) return next({ value, done: false });
      if (queue.length >= maxQueued) {
        // A consumer this slow would only fall further behind: tell it and stop.
        if (opts.onOverflow) queue.push(opts.onOverflow());
        stream.end();
        return;
      }
      queue.push(value);
    },
    end() {
      if (ended) return;
      ended = true;
      close();
      if (queue.length === 0) flushDone();
    },
    onClose(fn) {
      if (closed) fn();
      else teardown = fn;
    },
    next() {
      if (queue.length) return Promise.resolve({ value: queue.shift()!, done: false });
      if (ended) return Promise.resolve({ value: undefined, done: true });
      return new Promise((resolve) => waiting.push(resolve));
    },
    return() {
      queue.length = 0;
      close();
      flushDone();
      return Promise.resolve({ value: undefined, done: true });
    },
    throw(err?: unknown) {
      queue.length = 0;
      close();
      flushDone();
      return Promise.reject(err);
    },
    [Symbol.asyncIterator]() {
      return stream;
    },
  };
  return stream;
}
