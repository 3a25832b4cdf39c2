/**
 * Health endpoints (docs/API.md §10), public like /healthz:
 *   GET /livez  — 200 while the process serves requests;
 *   GET /readyz — 200 when the store answers and every enabled plugin has started, else 503
 *                 problem+json whose detail lists the reasons.
 * Both accept `?verbose` (as Kubernetes does): the answer then lists each check.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Unavailable } from '../errors/index.js';
import { sendJson, sendProblem } from '../errors/http.js';
import { parseTarget } from '../requestinfo/requestinfo.js';

/** A public endpoint: the handler and the query parameters it accepts (none when absent). */
export type PublicEndpoint = ((req: IncomingMessage, res: ServerResponse) => Promise<void>) & { params?: ReadonlySet<string> };

export interface Check {
  name: string;
  /** Resolves to the reasons the check fails (empty: it passes). */
  run(): Promise<string[]>;
}

const VERBOSE: ReadonlySet<string> = new Set(['verbose']);

/** An endpoint answering 200 when every check passes, else 503 naming the failures. */
export function healthEndpoint(path: string, checks: Check[]): PublicEndpoint {
  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const verbose = parseTarget(req.url).searchParams.has('verbose');
    const results = await Promise.all(
      checks.map(async (c) => ({ name: c.name, reasons: await c.run().catch((e: unknown) => [String((e as Error)?.message ?? e)]) })),
    );
    const failed = results.flatMap((r) => r.reasons.map((reason) => `${r.name}: ${reason}`));
    if (failed.length) {
      sendProblem(res, new Unavailable(`${path.slice(1)} check failed: ${failed.join('; ')}`), path);
      return;
    }
    const body: Record<string, unknown> = { status: 'ok' };
    if (verbose) body.checks = results.map((r) => ({ name: r.name, status: 'ok' }));
    sendJson(res, 200, body, { 'cache-control': 'no-store' });
  };
  return Object.assign(serve, { params: VERBOSE });
}

/** A check that fails when `probe` rejects or does not settle within `timeoutMs`. */
export function probeCheck(name: string, probe: () => Promise<unknown>, timeoutMs: number, failure: string): Check {
  return {
    name,
    async run() {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          probe(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
            timer.unref();
          }),
        ]);
        return [];
      } catch {
        return [failure];
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
