/**
 * The people plugin's console API (docs/API.md §7 "Custom routes"). Handlers are Fetch-API
 * functions; `ctx.client` acts as the caller, so a caller who may not list persons gets 403
 * from these routes too.
 *
 *   GET  /apis/console.api.people.example.com/v1alpha1/stats     counts by gender
 *   GET  /apis/console.api.people.example.com/v1alpha1/exports   every person as NDJSON, streamed
 *                                                                 page by page (back pressure)
 *   POST /apis/console.api.people.example.com/v1alpha1/imports   NDJSON body, read as a stream,
 *                                                                 one create per line
 */
import type { PluginCode } from 'svc-gateway/plugin';

const BASE = '/apis/console.api.people.example.com/v1alpha1';
const PAGE = 100;

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

export default {
  routes: [
    {
      method: 'GET',
      path: `${BASE}/stats`,
      // How the route appears in /openapi/v3 and /openapi.json (optional).
      openapi: {
        summary: 'Count persons by gender',
        operationId: 'getPersonStats',
        responses: {
          '200': {
            description: 'The counts.',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['total', 'byGender'],
                  properties: {
                    total: { type: 'integer' },
                    byGender: { type: 'object', properties: { MALE: { type: 'integer' }, FEMALE: { type: 'integer' } } },
                  },
                },
              },
            },
          },
        },
      },
      async handler(_request: Request, ctx) {
        const byGender: Record<string, number> = {};
        for (const g of ['MALE', 'FEMALE']) {
          byGender[g] = (await ctx.client.list('persons', { fieldSelector: [`spec.gender=${g}`], size: 1 })).total;
        }
        const total = (await ctx.client.list('persons', { size: 1 })).total;
        return json(200, { total, byGender });
      },
    },
    {
      method: 'GET',
      path: `${BASE}/exports`,
      async handler(_request: Request, ctx) {
        // Authorize (and fail with 403) before the 200 goes out.
        await ctx.client.list('persons', { size: 1 });
        let page = 1;
        let done = false;
        const encoder = new TextEncoder();
        // pull() is called only when the consumer wants more: a slow client slows the reads.
        const body = new ReadableStream<Uint8Array>({
          async pull(controller) {
            if (done) return controller.close();
            const res = await ctx.client.list('persons', { page, size: PAGE, sort: ['metadata.name,asc'] });
            for (const p of res.items) controller.enqueue(encoder.encode(JSON.stringify(p) + '\n'));
            page++;
            done = !res.hasNext;
            if (done) controller.close();
          },
        });
        return new Response(body, { headers: { 'content-type': 'application/x-ndjson' } });
      },
    },
    {
      method: 'POST',
      path: `${BASE}/imports`,
      openapi: {
        summary: 'Create persons from NDJSON, one object per line',
        requestBody: {
          required: true,
          // A model of the plugin is referenced by its type name (`PeopleExampleComV1alpha1Person`).
          content: { 'application/x-ndjson': { schema: { $ref: '#/components/schemas/PeopleExampleComV1alpha1Person' } } },
        },
        responses: {
          '200': {
            description: 'What was created, and the lines that failed.',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  properties: {
                    created: { type: 'array', items: { type: 'string' } },
                    errors: { type: 'array', items: { type: 'object', properties: { line: { type: 'integer' }, detail: { type: 'string' } } } },
                  },
                },
              },
            },
          },
        },
      },
      async handler(request: Request, ctx) {
        if (!request.body) return json(400, { title: 'Bad Request', status: 400, detail: 'an NDJSON body is required' });
        const created: string[] = [];
        const errors: { line: number; detail: string }[] = [];
        let buffer = '';
        let line = 0;
        const handle = async (text: string) => {
          line++;
          if (!text.trim()) return;
          try {
            const obj = await ctx.client.create('persons', JSON.parse(text));
            created.push(obj.metadata.name);
          } catch (e: any) {
            if (e?.status === 403) throw e;
            errors.push({ line, detail: e?.message ?? String(e) });
          }
        };
        const decoder = new TextDecoder();
        for await (const chunk of request.body as any as AsyncIterable<Uint8Array>) {
          buffer += decoder.decode(chunk, { stream: true });
          let nl;
          while ((nl = buffer.indexOf('\n')) >= 0) {
            await handle(buffer.slice(0, nl));
            buffer = buffer.slice(nl + 1);
          }
        }
        await handle(buffer + decoder.decode());
        return json(errors.length && !created.length ? 422 : 200, { created, errors });
      },
    },
  ],
} satisfies PluginCode;
