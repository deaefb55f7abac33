import { describe, expect, it } from 'vitest';
import { allowedBuckets, checkBuckets } from '../../../src/video/vendors/veo/buckets.js';

describe('Veo Cloud Storage allow-list', () => {
  it('allows the upstream’s own output bucket and the listed ones only', () => {
    const allowed = allowedBuckets({ storage_uri: 'gs://ours/videos/', allowed_gcs_buckets: ['gs://inputs', 'shared/'] });
    expect(allowed).toEqual(new Set(['inputs', 'shared', 'ours']));
    expect(() => checkBuckets({ instances: [{ image: { gcsUri: 'gs://inputs/a.png' } }], parameters: { storageUri: 'gs://ours/x/' } }, allowed)).not.toThrow();
    expect(() => checkBuckets({ instances: [{ lastFrame: { gcsUri: 'gs://someone-else/secret.png' } }] }, allowed)).toThrow(
      expect.objectContaining({ status: 400, param: 'instances[0].lastFrame.gcsUri' }),
    );
    expect(() => checkBuckets({ parameters: { storageUri: 'gs://elsewhere/' } }, allowed)).toThrow(expect.objectContaining({ param: 'parameters.storageUri' }));
    expect(() => checkBuckets({ instances: [{ referenceImages: [{ image: { gcsUri: 'gs://x/y' } }] }] }, allowedBuckets({}))).toThrow();
  });

  it('"*" allows any bucket', () => {
    expect(() => checkBuckets({ instances: [{ image: { gcsUri: 'gs://any/a.png' } }] }, allowedBuckets({ allowed_gcs_buckets: '*' }))).not.toThrow();
  });
});
