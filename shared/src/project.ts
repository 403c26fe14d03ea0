import { z } from 'zod';
import { Timestamp } from './time.ts';

const NAME = '[A-Za-z0-9][A-Za-z0-9_.-]{0,127}';
/** One part of a project id: an entity name or a project name. */
export const NAME_PART = new RegExp(`^${NAME}$`);
/** Both parts at once: no array of parts per check (every element of a batch names its project). */
const PROJECT_ID = new RegExp(`^${NAME}/${NAME}$`);

/** `<entity>/<project>`, each part matching {@link NAME_PART}. */
export const ProjectId = z
  .string()
  .refine((value) => PROJECT_ID.test(value), 'project_id must be "<entity>/<project>", each part 1-128 of [A-Za-z0-9_.-] starting with a letter or digit')
  .meta({ description: '`<entity>/<project>`', example: 'acme/chatbot' });

export function splitProjectId(projectId: string): { entity: string; project: string } {
  const [entity, project] = projectId.split('/') as [string, string];
  return { entity, project };
}

export const ProjectQueryReq = z
  .strictObject({
    entity: z.string().regex(NAME_PART, 'entity must be 1-128 of [A-Za-z0-9_.-] starting with a letter or digit').optional().meta({
      description: 'Only the projects of this entity (one of the caller\'s)',
    }),
  })
  .meta({ id: 'ProjectQueryReq' });
export type ProjectQueryReq = z.infer<typeof ProjectQueryReq>;

export const Project = z
  .strictObject({
    project_id: ProjectId,
    entity: z.string(),
    name: z.string(),
    created_at: Timestamp.meta({ description: 'When the project\'s first live record was created' }),
    counts: z.strictObject({
      calls: z.number().int(),
      queues: z.number().int().meta({ description: 'Queues not deleted' }),
      feedback: z.number().int(),
    }),
  })
  .meta({ id: 'Project' });
export type Project = z.infer<typeof Project>;

export const ProjectQueryRes = z.strictObject({ projects: z.array(Project) }).meta({ id: 'ProjectQueryRes' });
export type ProjectQueryRes = z.infer<typeof ProjectQueryRes>;
