import type { JsonObject } from '../../core/json.js';
import type { SimServer } from '../../sim/framework.js';
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
}

/** Everything a vendor folder exports through its index.ts. */
export interface VideoVendorModule {
  vendor: VideoVendor;
  /** What each model of this vendor accepts and can do (GET /v1/models, create validation). */
  capabilities(model: string): VideoCapabilities;
  simulator: {
    start(opts?: SimulatorOptions): Promise<SimServer>;
    demo(sim: SimServer): DemoUpstream;
  };
}
