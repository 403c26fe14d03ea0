// Set-up requests of the benchmarks (not measured): plain fetch, every answer checked, so that a
// benchmark never measures on top of a fixture that silently failed to build.

/**
 * A project whose id sorts after every measured one. A benchmark comparing writes to two projects
 * first writes some rows here, so that indexes that lead with project_id take both projects' rows
 * in their middle, as they take most projects' rows in a shared database: the project with the
 * greatest id gets the rightmost pages' cheaper appends (on PostgreSQL, about 3 ms of the
 * database's CPU per batch of 1,000 feedback records), which would favour one side.
 */
export const LATER_PROJECT = 'bench/zz-later';

export function basicAuth(key: string): string {
  return `Basic ${Buffer.from(`api:${key}`).toString('base64')}`;
}

/** Sends one JSON request and returns the parsed answer; anything but 200 throws with the body. */
export async function call<T = any>(url: string, method: 'GET' | 'POST', path: string, key: string, body?: unknown): Promise<T> {
  const response = await fetch(url + path, {
    method,
    headers: { authorization: basicAuth(key), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${method} ${path} answered ${response.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}

/** Runs `work` over the inputs with at most `concurrency` at a time; results in input order. */
export async function inParallel<I, O>(inputs: readonly I[], concurrency: number, work: (input: I, index: number) => Promise<O>): Promise<O[]> {
  const results = new Array<O>(inputs.length);
  let next = 0;
  const worker = async () => {
    while (next < inputs.length) {
      const index = next++;
      results[index] = await work(inputs[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, inputs.length) }, worker));
  return results;
}
