import type { ZodTypeAny } from 'zod';
import type { JsonObject } from '../../core/json.js';
import type { SimServer } from '../../sim/framework.js';
import type { DemoModel, EmbeddingSimulatorOptions, EmbeddingVendor, EmbeddingVendorModule } from '../types.js';

/** What an embeddings vendor folder declares in its index.ts; `defineEmbeddingsVendor` adds the embedded default's wiring. */
export interface EmbeddingsVendorDefinition {
  vendor: EmbeddingVendor;
  optionsSchema: ZodTypeAny;
  startSimulator(opts?: EmbeddingSimulatorOptions): Promise<SimServer>;
  /** The models the embedded default offers through this vendor's simulator. */
  demoModels: DemoModel[];
  /** Upstream options of the embedded default (none unless given). */
  demoOptions?(sim: SimServer): JsonObject;
  /** The embedded default sends the simulator's key as `api_key` unless the options carry the credentials. */
  demoCredentials?: 'simulator-key' | 'in-options';
}

export function defineEmbeddingsVendor(d: EmbeddingsVendorDefinition): EmbeddingVendorModule {
  return {
    id: d.vendor.id,
    vendor: d.vendor,
    optionsSchema: d.optionsSchema,
    simulator: {
      start: (opts) => d.startSimulator(opts),
      demo: (sim) => ({
        ...(d.demoCredentials === 'in-options' ? {} : { apiKey: String(sim.settings['apiKey']) }),
        options: d.demoOptions?.(sim) ?? {},
        models: d.demoModels,
      }),
    },
  };
}
