import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // As `npm start` runs the gateway: long downloads then take the path that collects as they
    // stream (src/http/stream-collect.ts), so the stream fault tests exercise it.
    poolOptions: { forks: { execArgv: ['--expose-gc'] } },
    reporters: ['default'],
  },
});
