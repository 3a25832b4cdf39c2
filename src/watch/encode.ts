/**
 * The wire form of watch events, shared by every transport: JSON text and its UTF-8 bytes,
 * computed once per event object however many watchers send it, and the ERROR event of an
 * ApiError.
 *
 * Module-level state: the two WeakMaps below are memos keyed by event objects, which are never
 * modified once built. What they hold is a pure function of the key (its JSON), nothing that
 * belongs to one gateway, so two gateways in one process may share them. Every other piece of
 * watch state is per gateway (./hub.ts).
 */
import type { ApiError } from '../errors/index.js';
import type { WatchEvent } from './types.js';

export const errorEvent = (err: ApiError): WatchEvent => ({
  type: 'ERROR',
  object: { code: err.status, message: err.detail },
  resourceVersion: '',
});

const encoded = new WeakMap<WatchEvent, string>();

/** JSON text of an event, computed once per event object. */
export function encodeWatchEvent(e: WatchEvent): string {
  let s = encoded.get(e);
  if (s === undefined) encoded.set(e, (s = JSON.stringify(e)));
  return s;
}

const encodedBytes = new WeakMap<WatchEvent, Buffer>();

/**
 * UTF-8 bytes of an event's JSON text, computed once per event object: every WebSocket that
 * sends it gets the same Buffer (ws would otherwise encode a string once per socket).
 */
export function encodeWatchEventBytes(e: WatchEvent): Buffer {
  let b = encodedBytes.get(e);
  if (b === undefined) encodedBytes.set(e, (b = Buffer.from(encodeWatchEvent(e))));
  return b;
}
