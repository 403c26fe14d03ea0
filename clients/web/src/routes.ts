// The app's pages and their paths under /app/. One parser and one path builder, so that links and
// the page switch in App.tsx can never disagree.
//
//   ''                                          projects
//   'models'                                    the model catalog (public)
//   'p/<entity>/<project>'                      a project: its queues, specs and calls
//   'p/<entity>/<project>/q/<queue_id>'         a queue: progress, items
//   'p/<entity>/<project>/q/<queue_id>/annotate'   annotating the queue
//   'p/<entity>/<project>/q/<queue_id>/agreement'  agreement between its annotators

export type Route =
  | { name: 'projects' }
  | { name: 'models' }
  | { name: 'project'; projectId: string }
  | { name: 'queue'; projectId: string; queueId: string }
  | { name: 'annotate'; projectId: string; queueId: string }
  | { name: 'agreement'; projectId: string; queueId: string }
  | { name: 'not-found'; page: string };

const QUEUE_PAGES = new Set(['annotate', 'agreement']);

export function parseRoute(page: string): Route {
  const parts = page.split('/').filter(Boolean).map((part) => {
    try {
      return decodeURIComponent(part);
    } catch {
      return part;
    }
  });
  if (parts.length === 0) return { name: 'projects' };
  if (parts.length === 1 && parts[0] === 'models') return { name: 'models' };
  if (parts[0] === 'p' && parts.length >= 3) {
    const projectId = `${parts[1]}/${parts[2]}`;
    if (parts.length === 3) return { name: 'project', projectId };
    if (parts[3] === 'q' && parts.length === 5) return { name: 'queue', projectId, queueId: parts[4]! };
    if (parts[3] === 'q' && parts.length === 6 && QUEUE_PAGES.has(parts[5]!)) {
      return { name: parts[5] as 'annotate' | 'agreement', projectId, queueId: parts[4]! };
    }
  }
  return { name: 'not-found', page };
}

/** The page path (for `Link to` and `navigate`) of a route. */
export function pathOf(route: Exclude<Route, { name: 'not-found' }>): string {
  switch (route.name) {
    case 'projects':
      return '';
    case 'models':
      return 'models';
    case 'project':
      return `p/${projectPath(route.projectId)}`;
    case 'queue':
      return `p/${projectPath(route.projectId)}/q/${encodeURIComponent(route.queueId)}`;
    case 'annotate':
    case 'agreement':
      return `p/${projectPath(route.projectId)}/q/${encodeURIComponent(route.queueId)}/${route.name}`;
  }
}

function projectPath(projectId: string): string {
  return projectId.split('/').map(encodeURIComponent).join('/');
}
