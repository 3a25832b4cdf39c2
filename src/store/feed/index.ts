/** The change-feed layer shared by both adapters (see shared-feed.ts). */
export { FEED_GATE, SharedFeed, type FeedGate, type SharedFeedOptions } from './shared-feed.js';
export {
  DEFAULT_RETENTION,
  expired,
  parsePosition,
  retentionFromEnv,
  type ChangeLog,
  type FeedRetention,
} from './change-log.js';
