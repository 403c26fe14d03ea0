import { CatalogError } from './catalog/catalog.ts';
import { ConfigError, loadConfig } from './config.ts';
import { createLogSink } from './log.ts';
import { startServer } from './server.ts';

// `npm start`: run the service until SIGTERM/SIGINT; SIGHUP reloads the model catalog.
try {
  const config = loadConfig();
  const sink = createLogSink(config.logLevel);
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
    console.error(`loupe: ${error.message}`);
    process.exit(2);
  }
  throw error;
}
