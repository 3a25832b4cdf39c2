/** Benchmark options: command-line flags win over environment variables, which win over defaults. */
import { parseArgs } from 'node:util';

export type StoreKind = 'embedded' | 'mongodb';

export interface BenchOptions {
  sizes: number[];
  /** Every size ≤ 10,000: smaller defaults for requests, rounds, warm-up and time budget. */
  quick: boolean;
  stores: StoreKind[];
  /** Measured requests per scenario and round (may be lowered by maxSeconds, see below). */
  requests: number;
  concurrency: number;
  rounds: number;
  /** Warm-up requests per scenario (also bounded by maxSeconds). */
  warmup: number;
  /**
   * Time budget of one measured run. When the warm-up shows a scenario is so slow that
   * `requests` would take longer, its request count for that size is lowered to fit (never
   * below `minRequests`) and printed; it is then fixed for every round.
   */
  maxSeconds: number;
  minRequests: number;
  seedConcurrency: number;
  page: number;
  pageSize: number;
  /** When set, the gateway child runs with --cpu-prof writing into this directory. */
  cpuProfDir?: string;
  /** Scenario ids to run (default all); ratios needing a skipped scenario are left out. */
  scenarios?: string[];
  /** The watch benchmark (issue 10): after the list benchmark (on), alone (only), or not (off). */
  watch: 'on' | 'off' | 'only';
  watchers: number;
  watchRate: number;
  watchSeconds: number;
  /** Watch benchmark: pin the watched gateway to CPU 0, its clients and the writing gateway to CPU 1. */
  pin: boolean;
  /** Watch benchmark: the watchers offer permessage-deflate, as browsers do. */
  watchDeflate: boolean;
  watchCycles: number;
  /**
   * Change-log retention (embedded, bench/lib/feed-history-bench.ts): after everything else (on),
   * alone (only), or not (off, the default).
   */
  feedHistory: 'on' | 'off' | 'only';
  /**
   * Operations cost (embedded, bench/lib/ops-bench.ts): REST get and create with metrics, the
   * request log at info and the audit log on vs all three off; after everything else (on), alone
   * (only), or not (off, the default).
   */
  ops: 'on' | 'off' | 'only';
  /**
   * Parse Server as a peer (bench/lib/parse-bench.ts): after everything else (on), alone (only),
   * or not (off, the default; it installs bench/parse on first use).
   */
  parse: 'on' | 'off' | 'only';
  parseSizes: number[];
  /** mongodb: both on FerretDB; embedded: the embedded store vs Parse on PostgreSQL. */
  parseStores: ('mongodb' | 'embedded')[];
  parseMaxSeconds: number;
  parseCreates: number;
  /** Parse comparison scenarios to run (default all). */
  parseScenarios?: string[];
  /**
   * Relation cost (embedded, bench/lib/relations-bench.ts, issue 32): a connection page of 40
   * deals with vs without each one's contact resolved; after everything else (on), alone (only),
   * or not (off, the default).
   */
  relations: 'on' | 'off' | 'only';
}

const HELP = `npm run bench [-- options]   (each option also as an environment variable)
Defaults in brackets apply when every size is ≤ 10,000 (quick mode).

  --sizes=1000,100000          BENCH_SIZES            object counts, ascending; grown in place
  --stores=embedded,mongodb    BENCH_STORES           mongodb = MONGODB_URL, else FerretDB via scripts/ferretdb.ts
  --requests=2000 [500]        BENCH_REQUESTS         measured requests per scenario and round
  --concurrency=8              BENCH_CONCURRENCY      requests in flight
  --rounds=3 [2]               BENCH_ROUNDS           interleaved rounds; medians are reported (5 with --keyset=only)
  --warmup=300 [50]            BENCH_WARMUP           warm-up requests per scenario
  --max-seconds=15 [1]         BENCH_MAX_SECONDS      time budget per measured run (lowers requests for slow scenarios)
  --min-requests=2×conc. [1×]  BENCH_MIN_REQUESTS     floor for the above
  --seed-concurrency=16        BENCH_SEED_CONCURRENCY creates in flight while seeding
  --page=1 --page-size=20      BENCH_PAGE, BENCH_PAGE_SIZE
  --cpu-prof=DIR               BENCH_CPU_PROF         profile the gateway child (node --cpu-prof) into DIR (and the watch clients)
  --watch=on|off|only          BENCH_WATCH            the watch benchmark after (on), instead of (only) or without (off) the list one
  --watchers=1000              BENCH_WATCHERS         WebSocket watchers on the watched gateway
  --watch-rate=500             BENCH_WATCH_RATE       writes/s offered in the delivery phase
  --watch-seconds=5            BENCH_WATCH_SECONDS    length of each write phase of the watch benchmark
  --watch-cycles=3             BENCH_WATCH_CYCLES     rounds of no watcher / watchers open (ratios: median round)
  --pin                        BENCH_PIN=1            watch benchmark: watched gateway on CPU 0, watch clients + writing gateway on CPU 1 (taskset)
  --no-watch-deflate           BENCH_WATCH_DEFLATE=0  watch benchmark: watchers do not offer permessage-deflate (browsers do)
  --feed-history=off|on|only   BENCH_FEED_HISTORY     embedded: create throughput, empty change log vs after 100,000 prior writes (~1 min; default off; only = alone)
  --ops=off|on|only            BENCH_OPS              embedded: REST get/create with metrics + request log + audit log on ÷ all off (~1 min; default off; only = alone)
  --parse=off|on|only          BENCH_PARSE            gateway vs Parse Server 9.10 (installs bench/parse on first use; default off; only = alone)
  --parse-sizes=1000,20000     BENCH_PARSE_SIZES      object counts of the Parse comparison, ascending; grown in place
  --parse-stores=mongodb,embedded BENCH_PARSE_STORES  mongodb: both on FerretDB; embedded: embedded store vs Parse on PostgreSQL
  --parse-max-seconds=8        BENCH_PARSE_MAX_SECONDS time budget per measured run of the Parse comparison
  --parse-creates=400          BENCH_PARSE_CREATES    creates per run and side in its create scenario
  --parse-scenarios=a,b        BENCH_PARSE_SCENARIOS  only these of get, gql-get, list, gql-connection, gql-pointer, create
  --relations=off|on|only      BENCH_RELATIONS        embedded: connection page of 40 deals with ÷ without each contact resolved (issue 32; default off)
  --keyset=only                BENCH_KEYSET=only      issue 31 alone: the keyset scenarios on the embedded store at 1,000 and 50,000 objects, no watch,
                                                      5 rounds
                                                      (sizes, stores and scenarios given explicitly still win)
  --scenarios=a,b              BENCH_SCENARIOS        only these of rest-list, raw-list, gql-list, rest-get, gql-get, raw-get, gql-noop, raw-list-opt, rest-get-user, rest-get-anon,
                                                      rest-keyset-first, rest-keyset-deep, rest-page-deep, gql-connection-first, gql-connection-deep
`;

const KEYSET_SCENARIOS = 'rest-keyset-first,rest-keyset-deep,rest-page-deep,gql-connection-first,gql-connection-deep';

function int(name: string, text: string, min = 1): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min}, got "${text}"`);
  return n;
}

export function parseOptions(argv = process.argv.slice(2), env = process.env): BenchOptions {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      sizes: { type: 'string' },
      stores: { type: 'string' },
      requests: { type: 'string' },
      concurrency: { type: 'string' },
      rounds: { type: 'string' },
      warmup: { type: 'string' },
      'max-seconds': { type: 'string' },
      'min-requests': { type: 'string' },
      'seed-concurrency': { type: 'string' },
      page: { type: 'string' },
      'page-size': { type: 'string' },
      'cpu-prof': { type: 'string' },
      scenarios: { type: 'string' },
      watch: { type: 'string' },
      watchers: { type: 'string' },
      'watch-rate': { type: 'string' },
      'watch-seconds': { type: 'string' },
      'watch-cycles': { type: 'string' },
      pin: { type: 'boolean' },
      'no-watch-deflate': { type: 'boolean' },
      'feed-history': { type: 'string' },
      ops: { type: 'string' },
      parse: { type: 'string' },
      'parse-sizes': { type: 'string' },
      'parse-stores': { type: 'string' },
      'parse-max-seconds': { type: 'string' },
      'parse-creates': { type: 'string' },
      'parse-scenarios': { type: 'string' },
      relations: { type: 'string' },
      keyset: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const get = (flag: keyof typeof values, envName: string, def: string) => String(values[flag] ?? env[envName] ?? def);
  // BENCH_KEYSET=only: issue 31's figures alone (defaults below; explicit options still win).
  const keysetOnly = String(values.keyset ?? env.BENCH_KEYSET ?? '') === 'only';
  if (!keysetOnly && (values.keyset ?? env.BENCH_KEYSET)) throw new Error('BENCH_KEYSET: only "only" is known');
  const sizes = get('sizes', 'BENCH_SIZES', keysetOnly ? '1000,50000' : '1000,100000')
    .split(',')
    .map((s) => int('BENCH_SIZES', s.trim().replace(/_/g, '')))
    .sort((a, b) => a - b);
  const stores = get('stores', 'BENCH_STORES', keysetOnly ? 'embedded' : 'embedded,mongodb')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const s of stores) if (s !== 'embedded' && s !== 'mongodb') throw new Error(`unknown store "${s}" (embedded, mongodb)`);
  const cpuProf = values['cpu-prof'] ?? env.BENCH_CPU_PROF;
  const concurrency = int('BENCH_CONCURRENCY', get('concurrency', 'BENCH_CONCURRENCY', '8'));
  // Quick mode (every size ≤ 10,000, e.g. BENCH_SIZES=200,2000): smaller defaults so both stores
  // finish in about a minute. Explicit options still win.
  const quick = Math.max(...sizes) <= 10_000;
  return {
    sizes: [...new Set(sizes)],
    stores: stores as StoreKind[],
    quick,
    requests: int('BENCH_REQUESTS', get('requests', 'BENCH_REQUESTS', quick ? '500' : '2000')),
    concurrency,
    rounds: int('BENCH_ROUNDS', get('rounds', 'BENCH_ROUNDS', quick ? '2' : keysetOnly ? '5' : '3')),
    warmup: int('BENCH_WARMUP', get('warmup', 'BENCH_WARMUP', quick ? '50' : '300'), 0),
    maxSeconds: Number(get('max-seconds', 'BENCH_MAX_SECONDS', quick ? '1' : '15')),
    minRequests: int('BENCH_MIN_REQUESTS', get('min-requests', 'BENCH_MIN_REQUESTS', String(quick ? concurrency : 2 * concurrency))),
    seedConcurrency: int('BENCH_SEED_CONCURRENCY', get('seed-concurrency', 'BENCH_SEED_CONCURRENCY', '16')),
    page: int('BENCH_PAGE', get('page', 'BENCH_PAGE', '1')),
    pageSize: int('BENCH_PAGE_SIZE', get('page-size', 'BENCH_PAGE_SIZE', '20')),
    cpuProfDir: cpuProf ? cpuProf : undefined,
    scenarios: (values.scenarios ?? env.BENCH_SCENARIOS ?? (keysetOnly ? KEYSET_SCENARIOS : undefined))?.split(',').map((x) => x.trim()).filter(Boolean),
    watch: watchMode(get('watch', 'BENCH_WATCH', keysetOnly ? 'off' : 'on')),
    watchers: int('BENCH_WATCHERS', get('watchers', 'BENCH_WATCHERS', '1000')),
    watchRate: int('BENCH_WATCH_RATE', get('watch-rate', 'BENCH_WATCH_RATE', '500')),
    watchSeconds: int('BENCH_WATCH_SECONDS', get('watch-seconds', 'BENCH_WATCH_SECONDS', '5')),
    watchCycles: int('BENCH_WATCH_CYCLES', get('watch-cycles', 'BENCH_WATCH_CYCLES', '3')),
    pin: values.pin ?? (env.BENCH_PIN !== undefined && env.BENCH_PIN !== '' && env.BENCH_PIN !== '0'),
    watchDeflate: !(values['no-watch-deflate'] ?? env.BENCH_WATCH_DEFLATE === '0'),
    feedHistory: mode('BENCH_FEED_HISTORY', get('feed-history', 'BENCH_FEED_HISTORY', 'off')),
    ops: mode('BENCH_OPS', get('ops', 'BENCH_OPS', 'off')),
    parse: mode('BENCH_PARSE', get('parse', 'BENCH_PARSE', 'off')),
    parseSizes: [
      ...new Set(
        get('parse-sizes', 'BENCH_PARSE_SIZES', '1000,20000')
          .split(',')
          .map((x) => int('BENCH_PARSE_SIZES', x.trim().replace(/_/g, '')))
          .sort((a, b) => a - b),
      ),
    ],
    parseStores: parseStores(get('parse-stores', 'BENCH_PARSE_STORES', 'mongodb,embedded')),
    parseMaxSeconds: Number(get('parse-max-seconds', 'BENCH_PARSE_MAX_SECONDS', '8')),
    parseCreates: int('BENCH_PARSE_CREATES', get('parse-creates', 'BENCH_PARSE_CREATES', '400')),
    parseScenarios: (values['parse-scenarios'] ?? env.BENCH_PARSE_SCENARIOS)?.split(',').map((x) => x.trim()).filter(Boolean),
    relations: mode('BENCH_RELATIONS', get('relations', 'BENCH_RELATIONS', 'off')),
  };
}

function parseStores(v: string): ('mongodb' | 'embedded')[] {
  const out = v.split(',').map((x) => x.trim()).filter(Boolean);
  for (const x of out) if (x !== 'mongodb' && x !== 'embedded') throw new Error(`BENCH_PARSE_STORES: unknown "${x}" (mongodb, embedded)`);
  return out as ('mongodb' | 'embedded')[];
}

function watchMode(v: string): 'on' | 'off' | 'only' {
  return mode('BENCH_WATCH', v);
}

function mode(name: string, v: string): 'on' | 'off' | 'only' {
  if (v !== 'on' && v !== 'off' && v !== 'only') throw new Error(`${name} must be on, off or only, got "${v}"`);
  return v;
}
