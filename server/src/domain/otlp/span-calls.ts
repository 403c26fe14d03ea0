import { ProjectId, toTimestamp, type CallCreateReq, type Json } from '@loupe/shared';
import { invalid } from '../errors.ts';
import { nestedAttributes } from './attributes.ts';
import { mapSpanContent } from './mapping-table.ts';
import type { KeyValues, ResourceSpans, SpanData } from './spans.ts';

/** The resource attribute that names a span's project when the request has no X-Loupe-Project header. */
export const PROJECT_ATTRIBUTE = 'loupe.project_id';
export const PROJECT_HEADER = 'X-Loupe-Project';

/** A span may start or end at most this far past the server's clock (a later time is a clock or encoding error). */
export const FUTURE_SLACK_MS = 24 * 60 * 60 * 1000;
const MAX_OP_NAME = 1024;
const MAX_EXCEPTION = 65_536;
const OTLP_STATUS_ERROR = 2;

/** A span as the call it becomes, with where each field came from. */
export type SpanCall = {
  call: CallCreateReq;
  /** Field → the span's field, attribute or event it came from; null where nothing was found. */
  sources: Record<string, string | null>;
};

export type RefusedSpan = { trace_id: string; span_id: string; name: string; reason: string };

/**
 * The calls of an export request (contract 5.9), span by span: each span becomes a call or is
 * refused with a reason (ids of the wrong length, times before 1970 or in the future, ...). The
 * project is `projectHeader` for every span, else the `loupe.project_id` attribute of each span's
 * resource; a resource without either fails the whole request (400).
 */
export function callsOfSpans(request: readonly ResourceSpans[], { projectHeader, now }: { projectHeader: string | undefined; now: number }) {
  const calls: SpanCall[] = [];
  const refused: RefusedSpan[] = [];
  for (const resourceSpans of request) {
    const projectId = projectHeader ?? projectOfResource(resourceSpans.resource);
    const projectSource = projectHeader === undefined ? `resource attribute ${PROJECT_ATTRIBUTE}` : `header ${PROJECT_HEADER}`;
    const resource = nestedAttributes(resourceSpans.resource);
    for (const { scope, spans } of resourceSpans.scopes) {
      for (const span of spans) {
        const reason = spanProblem(span, now);
        if (reason !== undefined) {
          refused.push({ trace_id: span.traceId.slice(0, 64), span_id: span.spanId.slice(0, 64), name: span.name.slice(0, 256), reason });
          continue;
        }
        calls.push(spanCall(span, { projectId, projectSource, resource, scope }));
      }
    }
  }
  return { calls, refused };
}

function projectOfResource(resource: KeyValues): string {
  const entry = resource.find(([key]) => key === PROJECT_ATTRIBUTE);
  if (entry === undefined) {
    throw invalid(`No project: send the header ${PROJECT_HEADER}: <entity>/<project>, or the resource attribute ${PROJECT_ATTRIBUTE}.`);
  }
  const parsed = ProjectId.safeParse(entry[1]);
  if (!parsed.success) {
    throw invalid(`The resource attribute ${PROJECT_ATTRIBUTE} must be "<entity>/<project>", each part 1-128 of [A-Za-z0-9_.-] starting with a letter or digit.`);
  }
  return parsed.data;
}

/** Why a span cannot be a call, or undefined. */
function spanProblem(span: SpanData, now: number): string | undefined {
  if (!/^[0-9a-f]{32}$/.test(span.traceId) || /^0+$/.test(span.traceId)) return 'its trace id is not 16 bytes (32 hex digits), not all zero';
  if (!isSpanId(span.spanId)) return 'its span id is not 8 bytes (16 hex digits), not all zero';
  if (span.parentSpanId !== '' && !isSpanId(span.parentSpanId)) return 'its parent span id is not empty or 8 bytes (16 hex digits), not all zero';
  if (span.name.length === 0) return 'it has no name';
  if (span.name.length > MAX_OP_NAME) return `its name is longer than ${MAX_OP_NAME} characters`;
  const latest = BigInt(now + FUTURE_SLACK_MS) * 1_000_000n;
  if (span.startNs === null || span.startNs === 0n) return 'its start time is not a positive whole number of nanoseconds since 1970';
  if (span.startNs > latest) return 'its start time is more than a day past the server\'s clock';
  if (span.endNs === null) return 'its end time is not a whole number of nanoseconds since 1970';
  if (span.endNs > latest) return 'its end time is more than a day past the server\'s clock';
  if (span.endNs !== 0n && span.endNs < span.startNs) return 'it ends before it starts';
  return undefined;
}

function isSpanId(id: string): boolean {
  return /^[0-9a-f]{16}$/.test(id) && id !== '0000000000000000';
}

type Context = { projectId: string; projectSource: string; resource: Json; scope: { name: string; version: string } };

function spanCall(span: SpanData, { projectId, projectSource, resource, scope }: Context): SpanCall {
  const view = { attributes: firstValues(span.attributes), events: span.events };
  const { inputs, output, consumed } = mapSpanContent(view);
  const exception = exceptionOf(span);
  const attributes = { ...nestedAttributes(span.attributes, consumed), resource, scope: { name: scope.name, version: scope.version } };
  const call = {
    project_id: projectId,
    id: span.spanId,
    trace_id: span.traceId,
    parent_id: span.parentSpanId === '' ? null : span.parentSpanId,
    op_name: span.name,
    started_at: toTimestamp(Number(span.startNs! / 1_000_000n)),
    ended_at: span.endNs === 0n ? null : toTimestamp(Number(span.endNs! / 1_000_000n)),
    inputs: (inputs?.value ?? null) as CallCreateReq['inputs'],
    output: output?.value ?? null,
    attributes,
    exception: exception?.text ?? null,
  };
  const kept = view.attributes.size - consumed.size;
  return {
    call,
    sources: {
      project_id: projectSource,
      id: 'span_id',
      trace_id: 'trace_id',
      parent_id: call.parent_id === null ? null : 'parent_span_id',
      op_name: 'name',
      started_at: 'start_time_unix_nano',
      ended_at: call.ended_at === null ? null : 'end_time_unix_nano',
      inputs: inputs ? `${inputs.source} (${inputs.convention})` : null,
      output: output ? `${output.source} (${output.convention})` : null,
      exception: exception?.source ?? null,
      attributes: `${kept} span attribute${kept === 1 ? '' : 's'}${consumed.size > 0 ? ` (${consumed.size} taken for inputs and output)` : ''}, resource attributes, scope`,
    },
  };
}

function firstValues(attributes: KeyValues): Map<string, Json> {
  const map = new Map<string, Json>();
  for (const [key, value] of attributes) if (!map.has(key)) map.set(key, value);
  return map;
}

/**
 * The span's exception: its last `exception` event (the stack trace, else `type: message`), else
 * its status when that is ERROR (the status message). Cut to the length a call's exception may have.
 */
function exceptionOf(span: SpanData): { text: string; source: string } | undefined {
  const event = span.events.findLast((candidate) => candidate.name === 'exception');
  if (event) {
    const field = (key: string) => {
      const value = event.attributes.find(([name]) => name === key)?.[1];
      return typeof value === 'string' && value !== '' ? value : undefined;
    };
    const stack = field('exception.stacktrace');
    const type = field('exception.type');
    const message = field('exception.message');
    const text = stack ?? ([type, message].filter(Boolean).join(': ') || 'exception');
    return { text: text.slice(0, MAX_EXCEPTION), source: 'event exception' };
  }
  if (span.status.code === OTLP_STATUS_ERROR) {
    return { text: (span.status.message || 'The span ended with status ERROR.').slice(0, MAX_EXCEPTION), source: 'status (ERROR)' };
  }
  return undefined;
}
