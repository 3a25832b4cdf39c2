/**
 * Counts the commands the MongoDB driver sends, with the driver's own command monitoring
 * (`monitorCommands`, 'commandStarted' events: GatewayOptions.onMongoCommand).
 *
 * Each command is recorded with its name, the collection it addresses and when it started, so a
 * test can count the commands sent while one request was in flight (its "request path") and
 * the commands a gateway sends while nobody uses it.
 */
import type { CommandStartedEvent } from 'mongodb';

export interface SeenCommand {
  name: string;
  /** The collection the command addresses ('' for database commands). */
  coll: string;
  at: number;
  command: Record<string, unknown>;
}

export class CommandLog {
  readonly seen: SeenCommand[] = [];
  readonly listener = (e: CommandStartedEvent): void => {
    const target = e.command[e.commandName];
    this.seen.push({
      name: e.commandName,
      coll: typeof target === 'string' ? target : '',
      at: performance.now(),
      command: e.command as Record<string, unknown>,
    });
  };

  /** Commands started while `fn` ran (inclusive), optionally only those `keep` accepts. */
  async during(fn: () => Promise<unknown>, keep: (c: SeenCommand) => boolean = () => true): Promise<SeenCommand[]> {
    const from = this.seen.length;
    await fn();
    return this.seen.slice(from).filter(keep);
  }

  /** Commands started during the next `ms` milliseconds. */
  async over(ms: number): Promise<SeenCommand[]> {
    const from = this.seen.length;
    await new Promise((r) => setTimeout(r, ms));
    return this.seen.slice(from);
  }
}

/** Collections of one model (objects, claims, feed segments), from its key `group/version/plural`. */
export function modelCollections(key: string): (c: SeenCommand) => boolean {
  const parts = key.split('/');
  if (parts[0] === '') parts[0] = 'core';
  const base = parts.join('.');
  return (c) => c.coll === `ext.${base}` || c.coll === `claims.${base}` || c.coll.startsWith(`feed.${base}.`);
}

export const describeCommands = (cs: SeenCommand[]): string => cs.map((c) => `${c.name} ${c.coll}`).join('; ');
