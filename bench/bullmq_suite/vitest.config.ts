import { defineConfig } from 'vitest/config';

// BullMQ's own vitest.config.ts (its include, timeouts and sequential files), plus what running
// it from here needs: the alias some of its test files import ioredis by, the port redirect
// (port-setup.ts), one fork at a time, and a JSON report per run (run.sh compares them).
export default defineConfig({
  resolve: {
    alias: {
      '@sinianluoye/ioredis': 'ioredis',
    },
    preserveSymlinks: false,
  },
  test: {
    include: ['tests/**/*.test.ts'],
    exclude: ['tests/test_*.ts', 'node_modules/**'],
    testTimeout: 10000,
    hookTimeout: 10000,
    setupFiles: ['./port-setup.ts', './vitest.setup.ts'],
    sequence: { concurrent: false },
    fileParallelism: false,
    pool: 'forks',
    poolOptions: { forks: { singleFork: true } },
    reporters: ['verbose', 'json'],
    outputFile: { json: process.env.VITEST_JSON_OUT || './results.json' },
    globals: false,
  },
});
