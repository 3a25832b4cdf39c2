/**
 * The storage port. Everything above this file (registry, operations, transports) talks to
 * storage only through these interfaces; only `server.ts` picks an adapter.
 *
 * Adapters: `mongo/` (MongoDB, production) and `embedded/` (SQLite in SVC_DATA_DIR).
 * Both must pass the shared contract suite in `test/store/contract.ts`.
 */
import type { ApiObject } from './object.js';

/** One secondary index as the store sees it: a name and how to enforce/sort it. */
export interface IndexDescriptor {
  /** Index name, unique within a model, e.g. `metadata.name`, `spec.slug`. */
  name: string;
  /** When true, no two objects may share any value of this index. */
  unique: boolean;
  /** Declared direction; adapters create the physical index in this order. */
  order: 'ASC' | 'DESC';
  /**
   * Identifies how values are derived (path or indexFunc source). When it changes for an
   * existing model, the adapter rebuilds the index over the stored objects.
   */
  fingerprint: string;
  /**
   * The dotted field path an index over a field reads (e.g. `spec.slug`; arrays on the way fan
   * out, as in json/values.ts `valuesAtPath`). Absent for computed indexes (indexFunc) and the
   * defaults. A store may compute such an index's values itself, or read the field natively.
   */
  path?: string;
  /**
   * Values are numbers (a path index over an `integer`/`number` field, docs/API.md §7): the store
   * sorts them numerically and compares requirement values as numbers (`"07"` finds 7). Values
   * and requirement values are still passed as strings; one that is not a number stays text
   * (and sorts after every number). Changing it changes the fingerprint (a rebuild).
   */
  numeric?: boolean;
  /**
   * Values are the text of one string field reached through no array (a path index over a
   * `string` field): at most one value per object, and that value is the field as stored. A store
   * may filter and sort on the field itself instead of keeping a copy of the value. Not part of
   * the fingerprint: the values are the same either way; a store that keeps them differently
   * records the flag itself (MongoDB: store/mongo/indexes.ts).
   */
  text?: boolean;
}

/** Index values of one object: index name -> values (strings, de-duplicated; empty = no value). */
export type IndexValues = Record<string, string[]>;

/** What a store needs to know about a model to keep its objects. */
export interface StorageModel {
  /** Stable storage identifier, e.g. `people.example.com/v1alpha1/persons`. */
  key: string;
  /** Every index of the model, the four defaults included (see registry/indexes.ts). */
  indexes: IndexDescriptor[];
  /**
   * Version of the declaration (the plugin's version), when known. A store shared by several
   * processes never lets an older declaration remove or redefine an index a newer one made.
   */
  version?: string;
  /** Computes the index values of an object. Pure and synchronous. */
  indexValues(obj: ApiObject): IndexValues;
}

/**
 * A condition on one index. Label selectors are mapped onto the `metadata.labels` index,
 * whose values are `key` (existence marker) and `key=value` for every label.
 *  - in:        some value of the object is in `values`
 *  - notin:     no value of the object is in `values` (objects without values match)
 *  - exists:    the object has at least one value
 *  - notexists: the object has no value
 *  - gt, gte, lt, lte: some value of the object compares so with `values[0]` (objects without
 *    values never match). On a numeric index (IndexDescriptor.numeric) numbers compare as numbers
 *    and a value that is not a number never matches; on any other index text compares by code
 *    point (index order).
 */
export interface IndexRequirement {
  index: string;
  op: 'in' | 'notin' | 'exists' | 'notexists' | RangeOp;
  values: string[];
  /**
   * The index is numeric: set by the planner for in-memory matching (query/match.ts) of range
   * requirements; adapters know their numeric indexes themselves.
   */
  numeric?: boolean;
}

export type RangeOp = 'gt' | 'gte' | 'lt' | 'lte';
export const isRangeOp = (op: string): op is RangeOp => op === 'gt' || op === 'gte' || op === 'lt' || op === 'lte';

/**
 * Sort on an index. Multi-valued indexes sort by their smallest value in both directions.
 * Objects without a value sort first ascending and last descending.
 */
export interface SortTerm {
  index: string;
  direction: 'asc' | 'desc';
}

/** A fully planned list query: only indexed conditions, a total order, a window. */
export interface StoreQuery {
  where: IndexRequirement[];
  /** Always ends with `metadata.name` so the order is total (query/plan.ts guarantees it). */
  sort: SortTerm[];
  offset: number;
  /** Undefined means all matches. */
  limit?: number;
}

export interface StoreListResult {
  items: ApiObject[];
  /** Number of matches of `where`, ignoring offset/limit. */
  total: number;
}

/**
 * One sort value of an object: the value its index sorts it by (the smallest value of a
 * multi-valued index; a number for a numeric index's numbers), or null when it has none.
 * Order: null, then numbers (numerically), then text (by code point); a descending term
 * reverses it, so objects without a value come first ascending and last descending.
 */
export type SortValue = string | number | null;
/**
 * A position in a sort order: an object's sort values, one per term of the query's sort up to
 * and including `metadata.name` (store/keyset.ts keysetTerms), which makes it unique.
 */
export type SortKey = SortValue[];

/** A keyset page (docs/API.md §12): the first `limit` matches strictly after `after`. */
export interface KeysetQuery {
  where: IndexRequirement[];
  /** As in StoreQuery (ends with metadata.name). */
  sort: SortTerm[];
  limit: number;
  /** The key of the last object of the previous page (absent: from the start). */
  after?: SortKey;
  /** The object at `after` itself counts too (at or after it). */
  inclusive?: boolean;
}

export interface KeysetPage {
  items: ApiObject[];
  /** Each item's key (keysetTerms of the query's sort), to continue after it. */
  keys: SortKey[];
  /** Whether a match follows the last item. */
  more: boolean;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/**
 * One committed change of one model, as recorded in the model's change feed in the database.
 *  - ADDED: `object` is the created object; no `previous`.
 *  - MODIFIED: `object` is the new state, `previous` the state it replaced.
 *  - DELETED (final removal): `object` and `previous` are both the object's final state: the
 *    `final` passed to `remove` (deletionTimestamp set), else the last stored state.
 */
export interface ChangeEvent {
  type: WatchEventType;
  object: ApiObject;
  previous?: ApiObject;
  /**
   * Position in the model's change feed, assigned by the database: a decimal integer string,
   * increasing along the feed; every gateway process sharing the database agrees on it.
   */
  resourceVersion: string;
}

export type Unsubscribe = () => void;

/** Called once when a subscription cannot continue (e.g. StoreError `Expired`); no events follow. */
export type OnFeedLost = (err: Error) => void;

/**
 * Which changes can matter to a subscriber, as a pure function shared by every subscriber with
 * the same `key` (e.g. one watch selector): `pass(e)` false means the subscriber would do
 * nothing with `e`. Subscribers with the same key must have gates that answer alike (the feed
 * asks one of them).
 */
export interface FeedGate {
  readonly key: string;
  pass(e: ChangeEvent): boolean;
  /**
   * Called when the subscriber joins its gate's group: from then on every change the feed
   * delivers is either handed to it or refused by the gate.
   */
  joined?(): void;
}

/**
 * How a subscriber lets the feed fan changes out in groups (store/feed/shared-feed.ts): both
 * optional; without them every change is handed to `onEvent`, one call per subscriber.
 */
export interface WatchHints {
  /**
   * The subscriber's gate, once nothing but the gate decides what it ignores (undefined until
   * then; asked again after each change handed to it). Subscribers with a gate that stand at the
   * feed's live position are kept in one group per key: a change is tested once per group, and
   * the members of a group it cannot matter to are not visited.
   */
  gate?(): FeedGate | undefined;
  /**
   * For group members: the changes of one read of the feed that passed the group's gate, in
   * order, in one call instead of one `onEvent` per change. Every member of a group receives
   * the same array, so work derived from it can be shared (and must not modify it).
   * `audience` is how many subscribers receive this same array (the group's size), so a
   * consumer can judge what shared work on it is worth (watch/frames.ts compresses only
   * for many).
   */
  onBatch?(events: readonly ChangeEvent[], audience: number): void;
}
/** Storage of the objects of one model. Obtained from `Store.model()`. */
export interface ModelStore {
  readonly model: StorageModel;
  get(name: string): Promise<ApiObject | null>;
  /**
   * Inserts a new object (`metadata.version` already set by the caller).
   * Throws StoreError `AlreadyExists` when the name is taken, `UniqueViolation` when a unique
   * index value is taken. Nothing is stored on failure.
   */
  create(obj: ApiObject): Promise<ApiObject>;
  /**
   * Replaces the stored object if, and only if, its stored `metadata.version` equals
   * `expectedVersion` (atomic compare-and-set). Throws `NotFound`, `Conflict` or `UniqueViolation`.
   */
  update(obj: ApiObject, expectedVersion: number): Promise<ApiObject>;
  /**
   * Removes the object if its stored version equals `expectedVersion`. Throws `NotFound`/`Conflict`.
   * `final` is the object as the delete leaves it (deletionTimestamp set); the DELETED change
   * carries it (the last stored state when omitted).
   */
  remove(name: string, expectedVersion: number, final?: ApiObject): Promise<void>;
  list(query: StoreQuery): Promise<StoreListResult>;
  /**
   * A keyset page: read from the index at `after`'s position on (limit + 1 objects at most), so
   * its cost does not grow with how many objects come before it. Objects lacking a sort value
   * are placed where `list` places them. No total is computed.
   */
  page(query: KeysetQuery): Promise<KeysetPage>;
  /**
   * The change-feed position now: every change at or before it is readable from the feed, and a
   * list read after this call reflects every change at or before it.
   */
  resourceVersion(): Promise<string>;
  /**
   * A position at or after every change that a read completed before this call may already
   * reflect. Where an object and its feed entry do not commit together (MongoDB: the object is
   * written before its entry is confirmed), a list can show a change beyond `resourceVersion()`;
   * a watch that follows a list reconciles the changes up to this position against the list.
   * Equal to `resourceVersion()` where both commit in one transaction (embedded).
   */
  horizon(): Promise<string>;
  /**
   * Subscribes to the changes after `from` (or after the current position when undefined), in
   * feed order, each exactly once. Rejects with StoreError `Expired` when `from` is not a
   * position the feed still holds (older than retention, or unknown). `onLost` is called when
   * the subscription ends on its own (store closed, feed lost); no event follows it. `hints`
   * let many subscribers share the fan-out work (WatchHints).
   */
  watch(from: string | undefined, onEvent: (e: ChangeEvent) => void, onLost?: OnFeedLost, hints?: WatchHints): Promise<Unsubscribe>;
}

export interface IndexBuildProgress {
  index: string;
  processed: number;
}

export interface Store {
  /** Adapter name for logs and docs: `mongodb` or `embedded`. */
  readonly kind: string;
  /**
   * Opens (creating if needed) the storage of a model, creates its physical indexes and builds
   * index values for stored objects that lack them (streaming, in batches). Idempotent.
   * A unique index added over objects that already share a value throws `UniqueViolation`
   * naming it. Calling it with a changed index set replaces earlier handles of the same key.
   * Adapters may build `metadata.creationTimestamp` descending whatever its declared order, so
   * the default sort has an exactly matching index.
   */
  model(model: StorageModel, onProgress?: (p: IndexBuildProgress) => void): Promise<ModelStore>;
  /** Resolves when the backing store answers; rejects (StoreError `Unavailable`) otherwise. */
  ping(): Promise<void>;
  /** Idempotent. */
  close(): Promise<void>;
}
