/**
 * The wire form of watch events, shared by every transport: JSON text and its UTF-8 bytes,
 * computed once per event object however many watchers send it, the BOOKMARK events and the
 * ERROR event of an ApiError.
 *
 * Module-level state: the two WeakMaps below are memos keyed by event objects, which are never
 * modified once built. What they hold is a pure function of the key (its JSON), nothing that
 * belongs to one gateway, so two gateways in one process may share them. Every other piece of
 * watch state is per gateway (./hub.ts).
 */
import type { ApiError } from '../errors/index.js';
import type { ApiObject } from '../store/object.js';
import type { WatchEvent } from './types.js';

/** The annotation of the BOOKMARK that ends a watch's initial events, as Kubernetes names it. */
export const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

/**
 * A BOOKMARK at `resourceVersion`. Its object is of the model's kind with nothing but
 * `metadata.resourceVersion` (and, for the one ending the initial events, the annotation
 * `k8s.io/initial-events-end: "true"`), as Kubernetes sends it.
 */
export function bookmarkEvent(model: { apiVersion: string; kind: string }, resourceVersion: string, initialEventsEnd = false): WatchEvent {
  const metadata = initialEventsEnd ? { resourceVersion, annotations: { [INITIAL_EVENTS_END]: 'true' } } : { resourceVersion };
  const object = { apiVersion: model.apiVersion, kind: model.kind, metadata } as unknown as ApiObject;
  return { type: 'BOOKMARK', object, resourceVersion };
}

/** Whether `e` is the BOOKMARK that ends the initial events. */
export const isInitialEventsEnd = (e: WatchEvent): boolean =>
  e.type === 'BOOKMARK' && (e.object as ApiObject).metadata?.annotations?.[INITIAL_EVENTS_END] === 'true';

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
