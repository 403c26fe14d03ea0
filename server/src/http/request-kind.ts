// What a request is, from its method and URL alone: the HTTP layer decides from these before
// anything else runs.

/** Methods whose requests carry a body (every other method's body is ignored). */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

export function carriesBody(method: string | undefined): boolean {
  return method !== undefined && BODY_METHODS.has(method);
}

/** Whether a path (or a URL with its query) is the typed door: `/trpc`, `/trpc/…`, `/trpc?…`. */
export function onTypedDoor(url: string): boolean {
  return /^\/trpc(\/|\?|$)/.test(url);
}
