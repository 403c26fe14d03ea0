import type { MigrationObject } from '@mikro-orm/core';
import * as pg1 from './postgresql/Migration0001Foundation.ts';
import * as pg2 from './postgresql/Migration0002Calls.ts';
import * as pg3 from './postgresql/Migration0003AnnotationQueues.ts';
import * as pg4 from './postgresql/Migration0004Feedback.ts';
import * as pg5 from './postgresql/Migration0005AuthFailures.ts';
import * as pg6 from './postgresql/Migration0006UnlimitedText.ts';
import * as pg7 from './postgresql/Migration0007FeedbackQueueIndex.ts';
import * as pg8 from './postgresql/Migration0008FeedbackQueueIndexNarrow.ts';
import * as pg9 from './postgresql/Migration0009FeedbackUserIndex.ts';
import * as pg10 from './postgresql/Migration0010ServerSecrets.ts';
import * as pg11 from './postgresql/Migration0011CallText.ts';
import * as pg12 from './postgresql/Migration0012CallParent.ts';
import * as pg13 from './postgresql/Migration0013QueueRules.ts';
import * as pg14 from './postgresql/Migration0014AssignmentOverlap.ts';
import * as pg15 from './postgresql/Migration0015Webhooks.ts';
import * as pg16 from './postgresql/Migration0016CallFilterIndexes.ts';
import * as pg17 from './postgresql/Migration0017People.ts';
import * as pg18 from './postgresql/Migration0018UserIdentities.ts';
import * as pg19 from './postgresql/Migration0019WebhookPayloadCompression.ts';
import * as pg20 from './postgresql/Migration0020RuleDayShards.ts';
import * as sqlite1 from './sqlite/Migration0001Foundation.ts';
import * as sqlite2 from './sqlite/Migration0002Calls.ts';
import * as sqlite3 from './sqlite/Migration0003AnnotationQueues.ts';
import * as sqlite4 from './sqlite/Migration0004Feedback.ts';
import * as sqlite5 from './sqlite/Migration0005AuthFailures.ts';
import * as sqlite6 from './sqlite/Migration0006UnlimitedText.ts';
import * as sqlite7 from './sqlite/Migration0007FeedbackQueueIndex.ts';
import * as sqlite8 from './sqlite/Migration0008FeedbackQueueIndexNarrow.ts';
import * as sqlite9 from './sqlite/Migration0009FeedbackUserIndex.ts';
import * as sqlite10 from './sqlite/Migration0010ServerSecrets.ts';
import * as sqlite11 from './sqlite/Migration0011CallText.ts';
import * as sqlite12 from './sqlite/Migration0012CallParent.ts';
import * as sqlite13 from './sqlite/Migration0013QueueRules.ts';
import * as sqlite14 from './sqlite/Migration0014AssignmentOverlap.ts';
import * as sqlite15 from './sqlite/Migration0015Webhooks.ts';
import * as sqlite16 from './sqlite/Migration0016CallFilterIndexes.ts';
import * as sqlite17 from './sqlite/Migration0017People.ts';
import * as sqlite18 from './sqlite/Migration0018UserIdentities.ts';
import * as sqlite19 from './sqlite/Migration0019WebhookPayloadCompression.ts';
import * as sqlite20 from './sqlite/Migration0020RuleDayShards.ts';

// Listed explicitly (no folder scan) so the same list works from source and from any bundle.
// Each dialect has its own SQL; names are shared so a deployment's history reads the same on both.
const list = (...modules: Record<string, MigrationObject['class']>[]): MigrationObject[] =>
  modules.map((module) => {
    const [name, migration] = Object.entries(module)[0]!;
    return { name, class: migration };
  });

export const migrations: Record<'sqlite' | 'postgresql', MigrationObject[]> = {
  sqlite: list(sqlite1, sqlite2, sqlite3, sqlite4, sqlite5, sqlite6, sqlite7, sqlite8, sqlite9, sqlite10, sqlite11, sqlite12, sqlite13, sqlite14, sqlite15, sqlite16, sqlite17, sqlite18, sqlite19, sqlite20),
  postgresql: list(pg1, pg2, pg3, pg4, pg5, pg6, pg7, pg8, pg9, pg10, pg11, pg12, pg13, pg14, pg15, pg16, pg17, pg18, pg19, pg20),
};
