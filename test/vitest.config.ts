import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default', ['json', { outputFile: 'reports/vitest.json' }]],
    globalSetup: ['src/harness/global-setup.ts', 'src/harness/web-build.ts'],
  },
});
