/**
 * A small closed-loop load generator on node:http with a keep-alive agent: `concurrency`
 * workers each send one request at a time until `requests` have been sent. Every response
 * body is read completely; a status other than 200 (or `okStatus`) counts as an error.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';

export interface RequestSpec {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  body?: string;
}

export interface LoadOptions {
  requests: number;
  concurrency: number;
  headers?: Record<string, string>;
  /** Stop starting new requests after this many ms (warm-up only); `requests` is then a maximum. */
  deadlineMs?: number;
  /** The status that counts as success (default 200; 201 for creates). */
  okStatus?: number;
  /** Called with the index and status of each request that failed (status 0: no response). */
  onError?: (i: number, status: number) => void;
}

export interface LoadResult {
  requests: number;
  errors: number;
  firstError?: string;
  elapsedMs: number;
  /** Requests per second over the whole run. */
  rps: number;
  /** Per-request latencies in milliseconds (successful and failed). */
  latencies: Float64Array;
  bytes: number;
}

export class HttpClient {
  private readonly agent: http.Agent;
  private readonly host: string;
  private readonly port: number;

  constructor(baseUrl: string, maxSockets: number) {
    const u = new URL(baseUrl);
    this.host = u.hostname;
    this.port = Number(u.port);
    this.agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  }

  /**
   * Sends one request. A keep-alive socket the server closed while idle (its keepAliveTimeout)
   * can fail on reuse with ECONNRESET before anything was processed: retried once, as the
   * Node.js documentation recommends (`request.reusedSocket`).
   */
  request(spec: RequestSpec, headers: Record<string, string> = {}, retry = true): Promise<{ status: number; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const h: Record<string, string | number> = { ...headers };
      let payload: Buffer | undefined;
      if (spec.body !== undefined) {
        payload = Buffer.from(spec.body);
        h['content-type'] = 'application/json';
        h['content-length'] = payload.length;
      }
      const req = http.request(
        { agent: this.agent, host: this.host, port: this.port, method: spec.method, path: spec.path, headers: h },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
          res.on('error', reject);
        },
      );
      req.on('error', (e: NodeJS.ErrnoException) => {
        if (retry && req.reusedSocket && e.code === 'ECONNRESET') this.request(spec, headers, false).then(resolve, reject);
        else reject(e);
      });
      req.end(payload);
    });
  }

  async json(spec: RequestSpec, headers: Record<string, string> = {}): Promise<unknown> {
    const r = await this.request(spec, headers);
    const text = r.body.toString('utf8');
    if (r.status !== 200) throw new Error(`${spec.method} ${spec.path} → ${r.status}: ${text.slice(0, 500)}`);
    return JSON.parse(text) as unknown;
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Runs `options.requests` requests, the i-th being `make(i)`. */
export async function runLoad(client: HttpClient, make: (i: number) => RequestSpec, options: LoadOptions): Promise<LoadResult> {
  const { requests, concurrency } = options;
  const latencies = new Float64Array(requests);
  let next = 0;
  let errors = 0;
  let bytes = 0;
  let firstError: string | undefined;
  const started = performance.now();
  const stopAt = options.deadlineMs === undefined ? Infinity : started + options.deadlineMs;
  const worker = async () => {
    while (next < requests && performance.now() < stopAt) {
      const i = next++;
      const spec = make(i);
      const t0 = performance.now();
      try {
        const r = await client.request(spec, options.headers);
        bytes += r.body.length;
        if (r.status !== (options.okStatus ?? 200)) {
          errors++;
          options.onError?.(i, r.status);
          firstError ??= `${spec.method} ${spec.path} → ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`;
        }
      } catch (e) {
        errors++;
        options.onError?.(i, 0);
        firstError ??= `${spec.method} ${spec.path}: ${(e as Error).message}`;
      }
      latencies[i] = performance.now() - t0;
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, requests) }, worker));
  const elapsedMs = performance.now() - started;
  const done = Math.min(next, requests);
  return { requests: done, errors, firstError, elapsedMs, rps: (done / elapsedMs) * 1000, latencies: latencies.subarray(0, done), bytes };
}

/** Nearest-rank percentile (p in 0..100) of unsorted samples. */
export function percentile(samples: Float64Array | number[], p: number): number {
  const sorted = Float64Array.from(samples).sort();
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * A/B rounds of two sides: each round runs both, the side that goes first alternating, so the
 * machine's drift falls on both. Returns each side's runs in round order and the per-round
 * ratios of their req/s (first side ÷ second).
 */
export async function alternatingRounds<S extends string>(
  rounds: number,
  sides: readonly [S, S],
  run: (side: S, round: number) => Promise<LoadResult>,
): Promise<{ runs: Record<S, LoadResult[]>; ratios: number[] }> {
  const [a, b] = sides;
  const runs = { [a]: [], [b]: [] } as unknown as Record<S, LoadResult[]>;
  const ratios: number[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const side of round % 2 ? [b, a] : [a, b]) runs[side].push(await run(side, round));
    ratios.push(runs[a][round]!.rps / runs[b][round]!.rps);
  }
  return { runs, ratios };
}
