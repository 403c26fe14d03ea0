/**
 * The API document's path template of a concrete request path (`/annotation_queues/q1/items/i1/progress`
 * → `/annotation_queues/{queue_id}/items/{item_id}/progress`), so that tests which try every
 * operation can check they left none out.
 */
export function operationTemplate(path: string): string {
  const [bare] = path.split('?');
  const parts = bare!.split('/');
  const names: Record<number, string> = {};
  if (parts[1] === 'annotation_queues' && parts.length > 2 && !['query', 'stats', 'mine'].includes(parts[2]!)) names[2] = '{queue_id}';
  if (parts[1] === 'annotation_queues' && parts[3] === 'items' && parts.length > 4 && !['query', 'claim', 'annotations', 'finished', 'assign'].includes(parts[4]!)) names[4] = '{item_id}';
  if (parts[1] === 'annotation_queues' && parts[3] === 'rules' && parts.length > 4 && !['query', 'preview'].includes(parts[4]!)) names[4] = '{rule_id}';
  if (parts[1] === 'calls' && parts.length === 3 && parts[2] !== 'query') names[2] = '{call_id}';
  if (parts[1] === 'webhooks' && parts.length > 2 && parts[2] !== 'query') names[2] = '{id}';
  if (parts[1] === 'webhooks' && parts[3] === 'deliveries' && parts.length > 5) names[4] = '{delivery_id}';
  if (parts[1] === 'entities' && parts.length > 2) names[2] = '{entity}';
  if (parts[1] === 'entities' && parts[3] === 'invitations' && parts.length > 4 && parts[4] !== 'query') names[4] = '{id}';
  if (parts[1] === 'entities' && parts[3] === 'members' && parts.length > 4 && parts[4] !== 'query') names[4] = '{user_id}';
  if (parts[1] === 'me' && parts[2] === 'api-keys' && parts.length > 3 && parts[3] !== 'query') names[3] = '{id}';
  return parts.map((part, index) => names[index] ?? part).join('/');
}
