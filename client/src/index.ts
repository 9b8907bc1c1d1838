export * from './api-client.ts';
export * from './budget-junit.ts';
export * from './result-tables.ts';
export { main as clientMain, CLIENT_USAGE, CLIENT_VERBS, type ClientVerb } from './client-cli.ts';
export type { ClientIo } from './client-command.ts';
