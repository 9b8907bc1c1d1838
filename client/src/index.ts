export * from './api-client.ts';
export * from './budget-junit.ts';
export * from './result-tables.ts';
