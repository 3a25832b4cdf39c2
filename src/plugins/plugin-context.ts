/** What a plugin's code receives: in `start`/`stop`, and (extended) in every route handler. */
import type { Logger } from 'pino';
import type { Caller } from '../identity/authorizer.js';
import type { ModelClient } from './model-client.js';

export interface PluginContext {
  /** The plugin's name. */
  plugin: string;
  log: Logger;
  /** Acts as the plugin itself: no RBAC check. Use it only where the code enforces its own rules. */
  privileged: ModelClient;
}

export interface PluginRouteContext extends PluginContext {
  /** Path parameters (`{param}` in the route path), percent-decoded. */
  params: Record<string, string>;
  /** The authenticated caller (`anonymous` for visitors). */
  user: Caller;
  /** Acts as the caller: every call is authorized as if the caller made it over REST. */
  client: ModelClient;
}
