// Says once, at the top of the run, whether the PostgreSQL half of the suite will run.
export default function setup(): void {
  if (!process.env.TEST_DATABASE_URL) {
    console.warn(
      '\n*** NOTICE: TEST_DATABASE_URL is unset: every PostgreSQL test is SKIPPED (each shows as skipped below). ' +
        'Set it, e.g. TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres, to run them. ***\n',
    );
  }
}
