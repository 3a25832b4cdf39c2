/** RBAC test helpers: users, roles and bindings created by the administrator over REST. */
import { expect } from 'vitest';
import WebSocket from 'ws';
import { basicAuth, call } from './gateway.js';

export async function createUser(gw: { url: string }, name: string, password = `pw-${name}-secret`): Promise<string> {
  const r = await call(gw, 'POST', '/api/v1alpha1/users', { metadata: { name }, spec: { displayName: name, password } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return basicAuth(name, password);
}

export async function createRole(
  gw: { url: string },
  name: string,
  rules: unknown[],
  meta: { labels?: Record<string, string>; annotations?: Record<string, string> } = {},
  auth?: string,
): Promise<{ status: number; body: any }> {
  return call(gw, 'POST', '/api/v1alpha1/roles', { metadata: { name, ...meta }, rules }, auth ? { authorization: auth } : {});
}

export async function bind(gw: { url: string }, username: string, role: string, auth?: string, name = `${username}-${role}`) {
  return call(
    gw,
    'POST',
    '/api/v1alpha1/rolebindings',
    { metadata: { name }, roleRef: { apiGroup: '', kind: 'Role', name: role }, subjects: [{ apiGroup: '', kind: 'User', name: username }] },
    auth ? { authorization: auth } : {},
  );
}

export const template = (plugin: string, extra: Record<string, string> = {}) => ({
  labels: { 'svc.run/role-template': 'true', ...extra },
  annotations: {},
  plugin,
});

/** Opens a REST watch WebSocket; resolves to the HTTP status when refused, or the socket with its events. */
export function watchSocket(url: string, auth?: string) {
  const ws = new WebSocket(url.replace(/^http/, 'ws'), auth ? { headers: { authorization: auth } } : {});
  const events: any[] = [];
  ws.on('message', (d) => events.push(JSON.parse(String(d))));
  const opened = new Promise<number>((resolve) => {
    ws.on('open', () => resolve(101));
    ws.on('unexpected-response', (_q, res) => resolve(res.statusCode ?? 0));
    ws.on('error', () => resolve(0));
  });
  const until = async (pred: () => boolean, ms = 5000) => {
    const end = Date.now() + ms;
    while (!pred() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  };
  return { ws, events, opened, until };
}
