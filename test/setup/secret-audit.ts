/**
 * Whole-run secret audit, worker side (issue 8, issue 11: "no password, token or hash in any
 * response or log line of the whole test run"). Loaded as a vitest setup file, so it is active in
 * every test file:
 *
 *  - learns the secrets each test uses as it sends them: passwords in request bodies (`"password"`
 *    JSON values, GraphQL `password: "…"` arguments and variables), the password of every Basic
 *    `authorization` header, every Bearer token, and every personal access token the gateway
 *    issues (its creation response is the one place it may appear, and is scanned without it);
 *  - scans, as they pass, every HTTP response the tests receive through `fetch` (headers and body;
 *    streamed bodies chunk by chunk without changing their back-pressure), every WebSocket message
 *    a `ws` client receives, and every log line of the gateways the tests start (in-process:
 *    `auditLogger()` in test/helpers/gateway.ts; child processes: `auditChildOutput`);
 *  - a finding is a known secret, a password hash (`$scrypt$`), a token digest field
 *    (`secretDigest`) or a `"password": "…"` value in any of them.
 *
 * Each test file writes its counts and findings to the run's audit directory; the global
 * teardown (test/setup/audit.ts) prints the totals and fails the run on any finding.
 */
import { randomBytes } from 'node:crypto';
import { ClientRequest, type IncomingMessage } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { format } from 'node:util';
import { Writable, type Readable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { afterAll, expect, inject } from 'vitest';
import { WebSocket } from 'ws';

declare module 'vitest' {
  export interface ProvidedContext {
    auditDir: string;
  }
}

/** Shorter values are not treated as secrets (too likely to occur by chance). */
const MIN_SECRET = 8;
const ALWAYS: Array<[RegExp, string]> = [
  [/\$scrypt\$/, 'password hash'],
  [/secretDigest/, 'token digest field'],
  [/"password"\s*:\s*"[^"]/, 'password value'],
];

const secrets = new Set<string>();
const counts = { responses: 0, wsMessages: 0, logLines: 0, secrets: 0 };
/** Response bodies still being read for the scan (awaited, briefly, at the end of the file). */
const pending = new Set<Promise<unknown>>();
const findings: Array<{ where: string; what: string; context: string }> = [];

export function learnSecret(s: string | undefined): void {
  if (s && s.length >= MIN_SECRET) secrets.add(s);
}

/** Masks every known secret, so a finding's context never prints one in full. */
function mask(text: string): string {
  let out = text;
  for (const s of secrets) out = out.split(s).join(`${s.slice(0, 2)}…(${s.length})`);
  return out;
}

function record(where: string, what: string, text: string, at: number): void {
  if (findings.length >= 50) return;
  const from = Math.max(0, at - 60);
  findings.push({ where, what, context: mask(text.slice(from, at + 80)) });
}

/** What in `text` would leak: a known secret, a hash, a digest field or a password value. */
export function findLeaks(text: string, known: Iterable<string>, opts: { code?: boolean } = {}): Array<{ what: string; at: number }> {
  const out: Array<{ what: string; at: number }> = [];
  for (const s of known) {
    const at = text.indexOf(s);
    if (at >= 0) out.push({ what: 'known secret', at });
  }
  for (const [re, what] of ALWAYS) {
    // Script and style files (the docs and GraphiQL bundles) hold `"password":"text"` literals.
    if (opts.code && what === 'password value') continue;
    const m = re.exec(text);
    if (m) out.push({ what, at: m.index });
  }
  return out;
}

/** Scans one piece of output; `where` says what it was (for the report). */
export function auditText(where: string, text: string, opts: { code?: boolean } = {}): void {
  for (const { what, at } of findLeaks(text, secrets, opts)) record(where, what, text, at);
}

/** How much this test file's audit has seen so far (for the audit's own test). */
export function auditCounts(): Readonly<typeof counts> & { known: ReadonlySet<string> } {
  return { ...counts, known: secrets };
}

function learnFromText(text: string): void {
  for (const m of text.matchAll(/"password"\s*:\s*"((?:[^"\\]|\\.)*)"/g)) {
    try {
      learnSecret(JSON.parse(`"${m[1]}"`) as string);
    } catch {
      learnSecret(m[1]);
    }
  }
  // GraphQL arguments written inline: password: "…" (also escaped inside a JSON-encoded query).
  for (const m of text.matchAll(/password\s*:\s*\\?"((?:[^"\\]|\\[^"])*)\\?"/g)) learnSecret(m[1]);
}

function learnFromAuthorization(value: string | null | undefined): void {
  if (!value) return;
  const [scheme, rest = ''] = value.trim().split(/\s+/, 2);
  if (/^basic$/i.test(scheme ?? '')) {
    const decoded = Buffer.from(rest, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon >= 0) learnSecret(decoded.slice(colon + 1));
    learnSecret(rest);
  } else if (/^bearer$/i.test(scheme ?? '')) {
    learnSecret(rest);
  }
}

// ---- fetch -------------------------------------------------------------------------------------

const STREAMING = /ndjson|event-stream|multipart|stream/i;
const realFetch = globalThis.fetch;

globalThis.fetch = async function auditedFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
  learnFromAuthorization(headers.get('authorization'));
  if (typeof init?.body === 'string') learnFromText(init.body);
  else if (init?.body instanceof Uint8Array && init.body.byteLength < 1 << 20) learnFromText(Buffer.from(init.body).toString('utf8'));

  const res = await realFetch(input, init);
  counts.responses++;
  const where = `response ${init?.method ?? 'GET'} ${url.replace(/^https?:\/\/[^/]+/, '').slice(0, 120)}`;
  auditText(where, [...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n'));
  if (!res.body) return res;

  if (STREAMING.test(res.headers.get('content-type') ?? '')) {
    // Scan in passing; the test reads (or cancels) the stream exactly as before.
    const decoder = new TextDecoder();
    let tail = '';
    const scanner = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const text = tail + decoder.decode(chunk, { stream: true });
        auditText(where, text);
        tail = text.slice(-256);
        controller.enqueue(chunk);
      },
    });
    return new Response(res.body.pipeThrough(scanner), { status: res.status, statusText: res.statusText, headers: res.headers });
  }

  const scanning = res
    .clone()
    .text()
    .then((text) => {
      let scanned = text;
      // The one response that carries a new personal access token: learn it, scan the rest.
      if (/"token"\s*:\s*"svcpat_/.test(text)) {
        try {
          const token = (JSON.parse(text) as { token?: string }).token;
          if (token) {
            scanned = text.split(token).join('<issued token>');
            learnSecret(token);
          }
        } catch {
          // not JSON: scanned as is
        }
      }
      auditText(where, scanned, { code: /^text\/(javascript|css)\b/.test(res.headers.get('content-type') ?? '') });
    })
    .catch(() => undefined)
    .finally(() => pending.delete(scanning));
  pending.add(scanning);
  return res;
} as typeof fetch;

// ---- node:http clients (raw requests of the hardening tests and the fuzzer) -------------------

type Emit = (event: string | symbol, ...args: unknown[]) => boolean;
const realRequestEmit = ClientRequest.prototype.emit as Emit;
ClientRequest.prototype.emit = function (this: ClientRequest, event: string | symbol, ...args: unknown[]): boolean {
  if (event === 'response') {
    const res = args[0] as IncomingMessage;
    counts.responses++;
    const where = `response ${this.method} ${this.path.slice(0, 120)}`;
    auditText(where, Object.entries(res.headers).map(([k, v]) => `${k}: ${String(v)}`).join('\n'));
    // Sees the body as it is emitted, without reading it: a test that never reads stays so.
    const realResEmit = res.emit as Emit;
    let tail = '';
    res.emit = function (this: IncomingMessage, e: string | symbol, ...a: unknown[]): boolean {
      if (e === 'data') {
        const text = tail + String(a[0]);
        auditText(where, text);
        tail = text.slice(-256);
      }
      return realResEmit.call(this, e, ...a);
    } as typeof res.emit;
  }
  return realRequestEmit.call(this, event, ...args);
} as typeof ClientRequest.prototype.emit;

const realWrite = ClientRequest.prototype.write as (...a: unknown[]) => boolean;
ClientRequest.prototype.write = function (this: ClientRequest, chunk: unknown, ...rest: unknown[]): boolean {
  if (typeof chunk === 'string' || Buffer.isBuffer(chunk)) learnFromText(String(chunk).slice(0, 1 << 20));
  return realWrite.call(this, chunk, ...rest);
} as typeof ClientRequest.prototype.write;
const realEnd = ClientRequest.prototype.end as (...a: unknown[]) => ClientRequest;
ClientRequest.prototype.end = function (this: ClientRequest, chunk?: unknown, ...rest: unknown[]): ClientRequest {
  if (typeof chunk === 'string' || Buffer.isBuffer(chunk)) learnFromText(String(chunk).slice(0, 1 << 20));
  const auth = this.getHeader('authorization');
  if (typeof auth === 'string') learnFromAuthorization(auth);
  return realEnd.call(this, chunk, ...rest);
} as typeof ClientRequest.prototype.end;

// ---- WebSocket clients -------------------------------------------------------------------------

type Internal = WebSocket & { _isServer?: boolean };
const realEmit = WebSocket.prototype.emit;
WebSocket.prototype.emit = function (this: Internal, event: string | symbol, ...args: unknown[]): boolean {
  if (event === 'message' && this._isServer === false) {
    counts.wsMessages++;
    const data = args[0];
    const text = Array.isArray(data) ? Buffer.concat(data as Buffer[]).toString('utf8') : Buffer.isBuffer(data) ? data.toString('utf8') : String(data);
    auditText(`ws message ${this.url?.replace(/^wss?:\/\/[^/]+/, '').slice(0, 120) ?? ''}`, text);
  }
  return realEmit.call(this, event, ...args);
} as typeof WebSocket.prototype.emit;

const realSend = WebSocket.prototype.send;
WebSocket.prototype.send = function (this: Internal, data: unknown, ...rest: unknown[]): void {
  if (this._isServer === false && (typeof data === 'string' || Buffer.isBuffer(data))) {
    const text = String(data);
    learnFromText(text);
    for (const m of text.matchAll(/"authorization"\s*:\s*"([^"]*)"/gi)) learnFromAuthorization(m[1]);
  }
  return (realSend as (...a: unknown[]) => void).call(this, data, ...rest);
} as typeof WebSocket.prototype.send;

// ---- logs --------------------------------------------------------------------------------------

function lineScanner(where: string): Writable {
  let partial = '';
  return new Writable({
    write(chunk, _enc, done) {
      const lines = (partial + String(chunk)).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        counts.logLines++;
        auditText(where, line);
      }
      done();
    },
    final(done) {
      if (partial) {
        counts.logLines++;
        auditText(where, partial);
      }
      done();
    },
  });
}

// Whatever reaches the console of a test process (libraries inside the in-process gateways
// print there: graphql-ws, yoga's fallback logger, Node warnings).
for (const level of ['log', 'info', 'warn', 'error', 'debug'] as const) {
  const real = console[level].bind(console);
  console[level] = (...args: unknown[]) => {
    counts.logLines++;
    auditText(`console.${level}`, format(...args));
    real(...args);
  };
}

/** A logger at the most verbose level whose every line is audited (and then dropped). */
export function auditLogger(): Logger {
  return pino({ level: 'trace' }, lineScanner('gateway log'));
}

/** Audits a child process's output streams line by line. */
export function auditChildOutput(name: string, ...streams: Array<Readable | null | undefined>): void {
  for (const s of streams) s?.pipe(lineScanner(`${name} output`));
}

// ---- per-file report ---------------------------------------------------------------------------

afterAll(async () => {
  await Promise.race([Promise.all(pending), new Promise((r) => setTimeout(r, 2000).unref())]);
  counts.secrets = secrets.size;
  const dir = inject('auditDir');
  if (!dir) return;
  const file = join(dir, `${process.pid}-${randomBytes(4).toString('hex')}.json`);
  writeFileSync(file, JSON.stringify({ file: expect.getState().testPath ?? '', counts, findings }));
});
