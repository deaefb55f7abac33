import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';

export interface LocalS3 {
  endpoint: string;
  bucket: string;
  /** The `video.blobs` config block for a gateway using this server. */
  config(prefix: string): Record<string, unknown>;
  close(): Promise<void>;
}

/** An S3-compatible server (s3rver, from npm: no network needed) on loopback, with one bucket. */
export async function startLocalS3(bucket = 'gateway-test'): Promise<LocalS3> {
  const directory = mkdtempSync(join(tmpdir(), 'gw-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    config: (prefix) => ({
      backend: 's3',
      bucket,
      prefix,
      endpoint,
      region: 'us-east-1',
      force_path_style: true,
      access_key_id: 'S3RVER',
      secret_access_key: 'S3RVER',
    }),
    async close() {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
