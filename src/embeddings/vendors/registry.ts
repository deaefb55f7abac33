import type { EmbeddingVendor, EmbeddingVendorModule } from '../types.js';
import { embeddingModule as openai } from './openai/index.js';
import { embeddingModule as vertex } from './vertex/index.js';
import { embeddingModule as bedrock } from './bedrock/index.js';

/** Every embeddings vendor the gateway speaks. Adding a vendor = one folder + one line here. */
export const embeddingModules: readonly EmbeddingVendorModule[] = [openai, vertex, bedrock];

export const embeddingVendors: ReadonlyMap<string, EmbeddingVendor> = new Map(embeddingModules.map((m) => [m.vendor.id, m.vendor]));

/** Vendor ids a config upstream may name for embeddings. */
export const embeddingVendorIds: readonly string[] = embeddingModules.map((m) => m.id);
