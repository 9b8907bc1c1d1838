export * from './setting-group.ts';
export * from './nats.ts';
export * from './logging.ts';
export * from './listening.ts';
export * from './targets.ts';
