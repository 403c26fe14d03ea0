import { inspect } from 'node:util';
import { CatalogError } from './catalog/catalog.ts';
import { ConfigError, loadConfig } from './config.ts';
import { secretMasker } from './db/database-url.ts';
import { DatabaseInUseError } from './db/sqlite-server-lock.ts';
import { createLogSink } from './log.ts';
import { startServer } from './server.ts';

// Whatever this process prints, the database password is not in it (DATABASE_URL as given, even
// one the configuration refuses).
const mask = secretMasker(process.env.DATABASE_URL);

// `npm start`: run the service until SIGTERM/SIGINT; SIGHUP reloads the model catalog.
try {
  const config = loadConfig();
  const sink = createLogSink(config.logLevel, mask);
  const log = sink.logger;
  const server = await startServer(config, log);
  sink.flush(); // the "listening" line, at once
  const stop = (signal: string) => {
    log.info({ signal }, 'signal received');
    server.close().then(
      () => {
        sink.flush();
        process.exit(0);
      },
      (error: unknown) => {
        log.error({ err: error }, 'shutdown failed');
        sink.flush();
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGHUP', () => server.services.catalog.reload());
} catch (error) {
  if (error instanceof ConfigError || error instanceof CatalogError) {
    console.error(mask(`loupe: ${error.message}`));
    process.exit(2);
  }
  if (error instanceof DatabaseInUseError) {
    console.error(mask(`loupe: ${error.message}`));
    process.exit(1);
  }
  console.error(mask(`loupe: start-up failed: ${inspect(error)}`));
  process.exit(1);
}
