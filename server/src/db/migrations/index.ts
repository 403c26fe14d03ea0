import type { MigrationObject } from '@mikro-orm/core';
import * as pg1 from './postgresql/Migration0001Foundation.ts';
import * as sqlite1 from './sqlite/Migration0001Foundation.ts';

// Listed explicitly (no folder scan) so the same list works from source and from any bundle.
// Each dialect has its own SQL; names are shared so a deployment's history reads the same on both.
export const migrations: Record<'sqlite' | 'postgresql', MigrationObject[]> = {
  sqlite: [{ name: 'Migration0001Foundation', class: sqlite1.Migration0001Foundation }],
  postgresql: [{ name: 'Migration0001Foundation', class: pg1.Migration0001Foundation }],
};
