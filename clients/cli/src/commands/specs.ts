import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { connect, type GlobalOptions } from '../connection.ts';
import { CliError, EXIT, refused } from '../errors.ts';
import { printResult } from '../output.ts';

/** A JSON value given on the command line, or read from a file named `@FILE`. */
export function jsonArgument(value: string, what: string): unknown {
  let text = value;
  if (value.startsWith('@')) {
    try {
      text = readFileSync(value.slice(1), 'utf8');
    } catch (error) {
      throw new CliError(`cannot read ${what} from ${value.slice(1)}: ${(error as Error).message}`, EXIT.usage);
    }
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new CliError(`${what} is not JSON: ${(error as Error).message}`, EXIT.usage);
  }
}

export function specsCommands(globals: () => GlobalOptions): Command {
  const specs = new Command('specs').description('annotation specs: the fields of a rubric');
  specs
    .command('create')
    .description("store an annotation spec (a rubric field); prints its ref, which a queue's --spec takes")
    .requiredOption('--project <project_id>', 'the project, <entity>/<project>')
    .requiredOption('--name <name>', 'the field name annotators see')
    .requiredOption('--schema <json>', "the field's JSON Schema, e.g. '{\"type\":\"boolean\"}', or @FILE")
    .option('--description <text>', 'what annotators are asked')
    .action(async (flags: { project: string; name: string; schema: string; description?: string }) => {
      const options = globals();
      const fieldSchema = jsonArgument(flags.schema, '--schema');
      if (typeof fieldSchema !== 'object' || fieldSchema === null || Array.isArray(fieldSchema)) throw new CliError('--schema must be a JSON object', EXIT.usage);
      const spec = await connect(options)
        .annotationSpecs.create.mutate({ project_id: flags.project, name: flags.name, field_schema: fieldSchema as Record<string, unknown>, ...(flags.description ? { description: flags.description } : {}) })
        .catch((error: unknown) => Promise.reject(refused(error)));
      printResult(options.json ?? false, spec, () => spec.ref);
    });
  return specs;
}
