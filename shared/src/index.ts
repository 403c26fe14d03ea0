export * from './errors.ts';
export * from './me.ts';
export * from './models.ts';
export * from './project.ts';
export * from './time.ts';
export * from './calls.ts';
export * from './query.ts';
