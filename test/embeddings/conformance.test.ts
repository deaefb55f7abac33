import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embeddingModules, embeddingVendorIds, embeddingVendors } from '../../src/embeddings/vendors/registry.js';
import type { SimServer } from '../../src/sim/framework.js';
import { asFloat32, post, startHarness, type Harness } from './harness.js';

/** What every registered embeddings vendor must do with its own simulator and demo wiring. */
describe.each(embeddingModules.map((m) => [m.id, m] as const))('conformance: %s', (id, module) => {
  let sim: SimServer;
  let h: Harness;
  let key: string;
  const models = () => module.simulator.demo(sim).models.filter((m) => m.capabilities.includes('embedding'));

  beforeAll(async () => {
    sim = await module.simulator.start();
    h = await startHarness([{ module, sim }]);
    ({ key } = await h.newKey(100));
  });
  afterAll(async () => {
    await h.close();
    await sim.close();
  });

  it('is registered under its id and prices its demo models per million input tokens', () => {
    expect(module.vendor.id).toBe(id);
    expect(embeddingVendors.get(id)).toBe(module.vendor);
    expect(embeddingVendorIds).toContain(id);
    expect(models().length).toBeGreaterThan(0);
    for (const m of models()) expect(m.pricePerMillionInput).toBeGreaterThan(0);
  });

  it('embeds a batch in order, in both encodings, with usage', async () => {
    const inputs = ['first text to embed', 'second text', 'third'];
    for (const m of models()) {
      const asFloat = await post(h, key, { model: m.name, input: inputs });
      expect(asFloat.status, asFloat.text).toBe(200);
      expect(asFloat.json).toMatchObject({ object: 'list', model: m.name });
      expect(asFloat.json.data.map((d: any) => [d.object, d.index])).toEqual(inputs.map((_, i) => ['embedding', i]));
      expect(asFloat.json.usage.prompt_tokens).toBeGreaterThan(0);
      expect(asFloat.json.usage.total_tokens).toBe(asFloat.json.usage.prompt_tokens);
      const asB64 = await post(h, key, { model: m.name, input: inputs, encoding_format: 'base64' });
      expect(asB64.status).toBe(200);
      asB64.json.data.forEach((d: any, i: number) => {
        expect(typeof d.embedding).toBe('string');
        expect(asFloat32(d.embedding)).toEqual(asFloat32(asFloat.json.data[i].embedding));
      });
      // Different inputs give different vectors: the upstream really embedded each one.
      expect(asFloat.json.data[0].embedding).not.toEqual(asFloat.json.data[1].embedding);
    }
  });

  it('turns every injected upstream failure into a 5xx from the gateway, never a 500', async () => {
    const m = models()[0]!.name;
    for (const fault of [{ kind: 'status', status: 500 }, { kind: 'malformed' }, { kind: 'reset' }] as const) {
      sim.inject(fault, 50);
      const r = await post(h, key, { model: m, input: 'x' });
      sim.clearFaults();
      h.catalog.circuits.success(`${id}-up`);
      expect([502, 503]).toContain(r.status);
      expect(r.json.error.type).toBe('server_error');
    }
  });
});
