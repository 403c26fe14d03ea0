import { Command, CommanderError } from 'commander';
import type { GlobalOptions } from './connection.ts';
import { CliError, EXIT } from './errors.ts';
import { exportCommands } from './commands/export.ts';
import { importCommands } from './commands/import.ts';
import { modelsCommand, whoamiCommand } from './commands/info.ts';
import { queuesCommands } from './commands/queues.ts';
import { specsCommands } from './commands/specs.ts';

// `loupe`: the command-line client. It talks to the server over HTTP with an API key, through the
// typed client, never to the database. Exit codes: 0 ok, 1 usage, 2 server refused, 3 partial.

const program = new Command('loupe')
  .description('Loupe from the command line: import calls and feedback, export labels')
  .option('--url <url>', 'the server (default $LOUPE_URL, else http://127.0.0.1:8000)')
  .option('--api-key <key>', 'the API key (default $LOUPE_API_KEY)')
  .option('--json', 'machine-readable output: one JSON line per result or summary')
  .showHelpAfterError()
  .exitOverride();

const globals = () => program.opts<GlobalOptions>();
program.addCommand(whoamiCommand(globals));
program.addCommand(modelsCommand(globals));
program.addCommand(specsCommands(globals));
program.addCommand(queuesCommands(globals));
program.addCommand(importCommands(globals));
program.addCommand(exportCommands(globals));
// Subcommands share the override, so a usage error anywhere exits 1 through the handler below.
for (const command of program.commands) {
  command.exitOverride();
  for (const sub of command.commands) sub.exitOverride();
}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Help and version end with code 0; every other parse failure is a usage error.
    process.exitCode = error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  } else if (error instanceof CliError) {
    process.stderr.write(`loupe: ${error.message}\n`);
    process.exitCode = error.exitCode;
  } else {
    process.stderr.write(`loupe: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = EXIT.refused;
  }
}
