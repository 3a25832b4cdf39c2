/**
 * vitest globalSetup: the whole-run secret audit (see test/setup/secret-audit.ts, which every
 * test file loads). Gives the workers a directory for their reports; after the run, prints the
 * totals and fails the run if any response, WebSocket message or log line held a password, a
 * token or a hash.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

interface Report {
  file: string;
  counts: { responses: number; wsMessages: number; logLines: number; secrets: number };
  findings: Array<{ where: string; what: string; context: string }>;
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-audit-'));
  project.provide('auditDir', dir);
  return async () => {
    const reports: Report[] = [];
    for (const name of await readdir(dir)) {
      if (name.endsWith('.json')) reports.push(JSON.parse(await readFile(join(dir, name), 'utf8')) as Report);
    }
    await rm(dir, { recursive: true, force: true });
    const sum = (k: keyof Report['counts']) => reports.reduce((n, r) => n + r.counts[k], 0);
    const found = reports.flatMap((r) => r.findings.map((f) => ({ ...f, file: r.file })));
    console.log(
      `[figure] secret audit of the whole run: ${reports.length} test files, ${sum('responses')} HTTP responses, ` +
        `${sum('wsMessages')} WebSocket messages, ${sum('logLines')} gateway log lines scanned against ` +
        `${sum('secrets')} passwords/tokens the tests used: ${found.length} findings`,
    );
    if (reports.length === 0) throw new Error('secret audit: no test file reported (is test/setup/secret-audit.ts loaded?)');
    if (found.length > 0) {
      const lines = found.slice(0, 20).map((f) => `  ${f.file}: ${f.what} in ${f.where}: …${f.context}…`);
      throw new Error(`secret audit: ${found.length} findings (a password, token or hash left the gateway)\n${lines.join('\n')}`);
    }
  };
}
