import { z } from 'zod';

/** One part of a project id: an entity name or a project name. */
export const NAME_PART = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** `<entity>/<project>`, each part matching {@link NAME_PART}. */
export const ProjectId = z
  .string()
  .refine((value) => {
    const parts = value.split('/');
    return parts.length === 2 && parts.every((part) => NAME_PART.test(part));
  }, 'project_id must be "<entity>/<project>", each part 1-128 of [A-Za-z0-9_.-] starting with a letter or digit')
  .meta({ description: '`<entity>/<project>`', example: 'acme/chatbot' });

export function splitProjectId(projectId: string): { entity: string; project: string } {
  const [entity, project] = projectId.split('/') as [string, string];
  return { entity, project };
}
