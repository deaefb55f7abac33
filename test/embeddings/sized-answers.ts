import { base64Floats, MODELS, sendJson, vendorAnswer, type FakeVendors } from './fake-vendors.js';
import type { UpstreamSpec } from './harness.js';

/**
 * Makes `fake` answer every call with one vector per input, of `length(requested)` values (the size
 * the call asked for upstream: `dimensions`, or Vertex's `outputDimensionality`), float or base64 as
 * asked; `onCall` hears of each call.
 */
export function answerWithLength(fake: FakeVendors, onCall: () => void, length: (requested: number | undefined) => number): void {
  fake.answer = ({ vendor, body, inputs, res }) => {
    onCall();
    const requested: number | undefined = vendor === 'vertex' ? body.parameters?.outputDimensionality : body.dimensions;
    const values = Array.from({ length: length(requested) }, (_, i) => ((i % 7) + 1) / 8);
    const vector = JSON.stringify(vendor === 'openai' && body.encoding_format === 'base64' ? base64Floats(values) : values);
    sendJson(res, vendorAnswer(vendor, Array.from({ length: inputs }, () => vector)));
  };
}

/** An upstream of the fake's OpenAI-compatible (or Vertex) kind, renamed and serving `model`. */
export function sizedUpstream(
  fake: FakeVendors,
  name: string,
  model: string,
  opts: { vendor?: 'openai' | 'vertex'; priority?: number; split?: boolean } = {},
): UpstreamSpec {
  const base = fake.specs().find((s) => s.models?.includes(MODELS[opts.vendor ?? 'openai']))!;
  return { ...base, name, models: [model], priority: opts.priority ?? 1, options: opts.split ? { max_batch: 1 } : undefined };
}
