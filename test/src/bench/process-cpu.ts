import { readFileSync } from 'node:fs';

// CPU time a process has used so far (user + system), read from /proc on Linux. Divided by the
// requests of a run it gives the server's CPU per request: a figure that, unlike requests per
// second, hardly moves when other work shares the machine. Null where /proc is not available.

const TICKS_PER_SECOND = 100; // USER_HZ, 100 on every Linux architecture Node runs on

export function cpuSeconds(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start at the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/** Runs `work` and returns its result with the CPU microseconds the process spent per unit of `count`. */
export async function withCpu<T>(pid: number | undefined, work: () => Promise<T>, count: (result: T) => number): Promise<{ result: T; cpu_us_per_request: number | null }> {
  const before = cpuSeconds(pid);
  const result = await work();
  const after = cpuSeconds(pid);
  const n = count(result);
  const perRequest = before === null || after === null || n === 0 ? null : Math.round(((after - before) * 1e6) / n);
  return { result, cpu_us_per_request: perRequest };
}
