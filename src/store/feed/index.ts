/** The change-feed layer shared by both adapters (see shared-feed.ts). */
export { deliveryWindowMs, SharedFeed, type SharedFeedOptions } from './shared-feed.js';
export {
  DEFAULT_RETENTION,
  expired,
  parsePosition,
  retentionFromEnv,
  type ChangeLog,
  type LogRead,
  type FeedRetention,
} from './change-log.js';
