import { Command } from 'commander';
import { connect, type GlobalOptions } from '../connection.ts';
import { refused } from '../errors.ts';
import { printResult } from '../output.ts';

/** `loupe whoami`: the caller's user id, username and memberships (GET /me). */
export function whoamiCommand(globals: () => GlobalOptions): Command {
  return new Command('whoami').description('the user the API key belongs to, and its memberships').action(async () => {
    const options = globals();
    const me = await connect(options).me.read.query({}).catch((error: unknown) => Promise.reject(refused(error)));
    printResult(options.json ?? false, me, () =>
      [`${me.username} (${me.user_id})`, ...me.memberships.map((m) => `  ${m.entity}: ${m.role}`)].join('\n'),
    );
  });
}

/** `loupe models`: the public model catalog (no key needed). */
export function modelsCommand(globals: () => GlobalOptions): Command {
  return new Command('models').description('the public model catalog').action(async () => {
    const options = globals();
    const list = await connect(options, { needsKey: false }).models.list.query({}).catch((error: unknown) => Promise.reject(refused(error)));
    printResult(options.json ?? false, list, () =>
      list.data.map((m) => `${m.id}\t${m.name}\tcontext ${m.context_length}\t${m.quantization}`).join('\n') || '(no models)',
    );
  });
}
