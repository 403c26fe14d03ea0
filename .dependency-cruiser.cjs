// The layers of the code base, kept by `npm run layers` (part of `npm test`). Each layer imports
// only from the layers before it:
//
//   shared ← config, log ← db ← domain, catalog ← events, webhooks, auth ← api ← http ← app (app.ts,
//   server.ts, main.ts, index.ts, admin/)
//
// and the web app and the CLI reach the server only through @loupe/client and @loupe/shared.
// Type-only imports count too (a type is a dependency the next refactoring trips over), and no
// module may take part in an import cycle.
const SERVER = '^server/src/';
const layer = (...dirs) => `${SERVER}(${dirs.join('|')})`;
const BASE = `${SERVER}(config|log)\\.ts$`;
const APP = `${SERVER}((app|server|main|index)\\.ts$|admin/)`;

/** A rule that forbids `from` to import any of `to`. */
const forbid = (name, comment, from, to) => ({ name, comment, severity: 'error', from: { path: from }, to: { path: to } });

module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      comment: 'An import cycle (type-only imports included) ties its modules into one: none may be changed or tested alone.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    forbid('shared-stands-alone', 'shared/ holds the wire schemas: it imports no other package of the project.', '^shared/', '^(server|clients)/'),
    forbid('base-imports-no-layer', 'config and log are read by every layer and depend on none.', BASE, [
      layer('db', 'domain', 'catalog', 'auth', 'events', 'webhooks', 'api', 'http'),
      APP,
    ]),
    forbid('db-below-domain', 'db/ knows tables, not the rules of the product.', `${SERVER}db/`, [layer('domain', 'catalog', 'auth', 'events', 'webhooks', 'api', 'http'), APP]),
    forbid('domain-below-infrastructure', 'domain/ and catalog/ are used by events, webhooks, auth and the API; they do not reach back.', layer('domain', 'catalog'), [
      layer('auth', 'events', 'webhooks', 'api', 'http'),
      APP,
    ]),
    forbid('webhooks-apart', 'webhooks/ (the delivery worker) sits beside auth/ and events/: none of them imports another.', `${SERVER}webhooks/`, layer('auth', 'events')),
    forbid('others-apart-from-webhooks', 'webhooks/ sits beside auth/ and events/: none of them imports another.', layer('auth', 'events'), `${SERVER}webhooks/`),
    forbid('auth-and-events-apart', 'auth/ and events/ sit side by side: neither imports the other.', `${SERVER}auth/`, `${SERVER}events/`),
    forbid('events-and-auth-apart', 'auth/ and events/ sit side by side: neither imports the other.', `${SERVER}events/`, `${SERVER}auth/`),
    forbid('auth-and-events-below-api', 'auth/, events/ and webhooks/ do not know the tRPC layer or HTTP.', layer('auth', 'events', 'webhooks'), [layer('api', 'http'), APP]),
    forbid('api-below-http', 'api/ (the tRPC router and its context) does not know Express or the HTTP layer.', `${SERVER}api/`, [layer('http'), APP]),
    forbid('http-below-app', 'http/ does not know how the server is started or administered.', `${SERVER}http/`, APP),
    forbid('server-imports-no-client', 'The server does not import its clients.', '^server/', '^clients/'),
    forbid(
      'clients-through-the-typed-client',
      'The web app and the CLI reach the server through @loupe/client (its AppRouter types included) and @loupe/shared only.',
      '^clients/(web|cli)/',
      '^server/',
    ),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist|build)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'types', 'default'], extensions: ['.ts', '.tsx', '.js'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
