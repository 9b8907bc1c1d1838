export * from './exit-codes.ts';
export * from './locations.ts';
export * from './command-table.ts';
