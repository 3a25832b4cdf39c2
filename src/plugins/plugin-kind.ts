/**
 * The Plugin kind: every plugin is an object at /apis/plugin.svc.run/v1alpha1/plugins/{name}.
 * `spec` mirrors the manifest (the administrator flips `spec.enabled`); `status` is written by
 * the lifecycle controller only.
 */
import type { CompileOptions } from '../registry/compile.js';
import type { ModelDeclaration } from '../registry/model.js';

export const PLUGIN_KIND: ModelDeclaration = {
  group: 'plugin.svc.run',
  version: 'v1alpha1',
  kind: 'Plugin',
  singular: 'plugin',
  plural: 'plugins',
  schema: {
    required: ['spec'],
    properties: {
      spec: {
        type: 'object',
        description: 'From the manifest; spec.enabled starts (true) or stops (false) the plugin.',
        properties: {
          version: { type: 'string', maxLength: 64 },
          displayName: { type: 'string', maxLength: 256 },
          description: { type: 'string', maxLength: 4096 },
          requires: { type: 'array', items: { type: 'string' } },
          enabled: { type: 'boolean' },
        },
      },
      status: {
        type: 'object',
        description: 'Written by the gateway.',
        properties: {
          phase: { type: 'string', enum: ['PENDING', 'STARTING', 'STARTED', 'STOPPED', 'FAILED'] },
          reason: { type: 'string', description: 'Why the plugin is FAILED (or what it is doing).' },
          version: { type: 'string', description: 'Version of the running code.' },
          platform: { type: 'boolean', description: 'Shipped inside the gateway.' },
          lastTransitionTime: { type: 'string' },
          indexes: {
            type: 'array',
            description: 'Index-build progress while STARTING.',
            items: {
              type: 'object',
              properties: {
                model: { type: 'string' },
                index: { type: 'string' },
                processed: { type: 'integer' },
              },
            },
          },
        },
      },
    },
  },
};

export const PLUGIN_KIND_OPTIONS: CompileOptions = { platform: true };

export type PluginPhase = 'PENDING' | 'STARTING' | 'STARTED' | 'STOPPED' | 'FAILED';

export interface PluginStatus {
  phase: PluginPhase;
  reason?: string;
  version?: string;
  platform?: boolean;
  lastTransitionTime?: string;
  indexes?: { model: string; index: string; processed: number }[];
}
