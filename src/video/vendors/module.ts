import type { ZodTypeAny } from 'zod';
import type { JsonObject } from '../../core/json.js';
import type { SimServer } from '../../sim/framework.js';
import type { TaskBookLimits } from '../../sim/tasks.js';
import type { VideoCapabilities, VideoVendor } from '../types.js';

/** How the embedded default wires one upstream to this vendor's simulator. */
export interface DemoUpstream {
  apiKey?: string;
  /** Vendor-specific upstream options (project, location, api_version, credentials ...). */
  options: JsonObject;
  models: { name: string; pricePerSecond: number; description?: string }[];
}

export interface SimulatorOptions {
  /** How long a simulated task takes to finish, in ms (default: a few seconds for the demo). */
  taskMs?: number;
  /** The credential the simulator expects (static key or token). */
  apiKey?: string;
  port?: number;
  /** How many tasks the simulator keeps, and how long (default: sim/tasks.ts DEFAULT_TASK_LIMITS). */
  tasks?: TaskBookLimits;
}

/** Everything a vendor folder exports through its index.ts. */
export interface VideoVendorModule {
  vendor: VideoVendor;
  /** What each model of this vendor accepts and can do (GET /v1/models, create validation). */
  capabilities(model: string): VideoCapabilities;
  /** The upstream options this vendor reads (keys beyond the common upstream keys), checked at start. */
  optionsSchema: ZodTypeAny;
  simulator: {
    start(opts?: SimulatorOptions): Promise<SimServer>;
    demo(sim: SimServer): DemoUpstream;
  };
}

/** What a vendor folder declares in its index.ts; `defineVideoVendor` adds the embedded default's wiring. */
export interface VideoVendorDefinition {
  vendor: VideoVendor;
  capabilities(model: string): VideoCapabilities;
  optionsSchema: ZodTypeAny;
  startSimulator(opts?: SimulatorOptions): Promise<SimServer>;
  /** The models the embedded default offers through this vendor's simulator. */
  demoModels: DemoUpstream['models'];
  /** Upstream options of the embedded default (none unless given). */
  demoOptions?(sim: SimServer): JsonObject;
  /** The embedded default sends the simulator's key as `api_key` unless the options carry the credentials. */
  demoCredentials?: 'simulator-key' | 'in-options';
}

export function defineVideoVendor(d: VideoVendorDefinition): VideoVendorModule {
  return {
    vendor: d.vendor,
    capabilities: d.capabilities,
    optionsSchema: d.optionsSchema,
    simulator: {
      start: (opts) => d.startSimulator(opts),
      demo: (sim) => ({
        ...(d.demoCredentials === 'in-options' ? {} : { apiKey: String(sim.settings['apiKey'] ?? 'sim-key') }),
        options: d.demoOptions?.(sim) ?? {},
        models: d.demoModels,
      }),
    },
  };
}
