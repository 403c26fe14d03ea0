export { startServer, type RunningServer } from './server.ts';
export { loadConfig, ConfigError, type Config } from './config.ts';
export { openDatabase, migrate, dialectOf, forkEm, type Orm, type Em } from './db/orm.ts';
export { parseCatalog, CatalogError } from './catalog/catalog.ts';
export { createLogger } from './log.ts';
export type { AppRouter, RouterInputs, RouterOutputs } from './api/router.ts';
export { createUser, createKey, revokeKey, addMember, listKeys } from './admin/commands.ts';
export { sqlRows, sqlRun, sqlTransaction } from './db/sql.ts';
