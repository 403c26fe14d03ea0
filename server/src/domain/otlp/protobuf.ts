import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

// The OTLP messages, loaded once from the definitions in ./proto (OTLP 1.5.0). protobufjs generates
// a decoder and an encoder per message from them (reflection with generated code: no build step,
// and as fast as its static code).

const PROTO_ROOT = fileURLToPath(new URL('./proto/', import.meta.url));

const root = new protobuf.Root();
// Imports name paths from the root of the definitions, as in opentelemetry-proto.
root.resolvePath = (_origin, target) => (target.startsWith(PROTO_ROOT) ? target : PROTO_ROOT + target);
root.loadSync(['opentelemetry/proto/collector/trace/v1/trace_service.proto', 'google/rpc/status.proto'], { keepCase: false });
root.resolveAll();

export const ExportTraceServiceRequest = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
export const ExportTraceServiceResponse = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse');
export const RpcStatus = root.lookupType('google.rpc.Status');

/** A 64-bit integer as protobufjs decodes it: a long.js `Long` (its dependency), or a number. */
export type LongLike = number | { low: number; high: number; unsigned: boolean };

/** The unsigned value of a fixed64 (OTLP's times). */
export function unsignedOf(value: LongLike | null | undefined): bigint {
  if (value === null || value === undefined) return 0n;
  if (typeof value === 'number') return BigInt(value);
  return (BigInt(value.high >>> 0) << 32n) | BigInt(value.low >>> 0);
}

/** A signed int64 (an attribute's int value): a number when it is exact, else its decimal text. */
export function int64Json(value: LongLike): number | string {
  if (typeof value === 'number') return value;
  const big = BigInt.asIntN(64, (BigInt(value.high >>> 0) << 32n) | BigInt(value.low >>> 0));
  return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big.toString();
}

export const Reader = protobuf.Reader;
export type Reader = protobuf.Reader;
