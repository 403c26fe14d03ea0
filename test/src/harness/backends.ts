import { describe } from 'vitest';
import { BACKENDS, postgresAvailable, type Backend } from './databases.ts';

/**
 * Declares the same tests once per database backend. Without TEST_DATABASE_URL the PostgreSQL
 * half is declared skipped under a name that says why, so the skip is visible in every report.
 */
export function describeEachBackend(name: string, body: (backend: Backend) => void): void {
  for (const backend of BACKENDS) {
    if (backend === 'postgresql' && !postgresAvailable) {
      describe.skip(`${name} [postgresql — SKIPPED: TEST_DATABASE_URL is unset]`, () => body(backend));
    } else {
      describe(`${name} [${backend}]`, () => body(backend));
    }
  }
}
