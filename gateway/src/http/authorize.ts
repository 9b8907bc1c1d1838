import type { NextFunction, Request, Response } from 'express';
import { ApiError, roleAtLeast, type ApiEndpoint, type Role } from '@perfwatch/common';
import type { Caller } from './auth.ts';

/**
 * Who may use an endpoint (issue 33): the role its reads need and the role its writes need, and
 * what a `ci` token may do there (on the projects it lists; nothing when absent). Declared once
 * per endpoint in the endpoint table, checked by `authorize` before the route runs: routes never
 * check roles themselves.
 */
export interface Access {
  read: Role;
  write: Role;
  ci?: 'read' | 'write';
  /** Whether a request writes, besides PUT, PATCH, DELETE and the contract's `writes` parameters. */
  isWrite?: (req: Request) => boolean;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Whether the request changes something: its method, or a parameter that writes (a POST's body, a GET's query). */
export function writes(contract: Pick<ApiEndpoint, 'writes'>, access: Access, req: Request): boolean {
  if (req.method === 'PUT' || req.method === 'PATCH' || req.method === 'DELETE') return true;
  const given: unknown = req.method === 'POST' ? req.body : req.query;
  if (contract.writes && isObject(given) && contract.writes.some((name) => Object.hasOwn(given, name))) return true;
  return access.isWrite?.(req) ?? false;
}

/** Why `caller` may not make this request; null when it may. */
export function refusal(caller: Caller, access: Access, write: boolean): string | null {
  const needed = write ? access.write : access.read;
  if (caller.projects !== null) {
    if (access.ci === undefined)
      return 'a ci token runs updates and annotates its projects, and reads them; nothing else';
    if (write && access.ci !== 'write') return 'a ci token may read this, not change it';
  }
  // A ci token too: it never does more than its member's role (a member demoted to viewer).
  if (!roleAtLeast(caller.role, needed)) {
    const what = write ? 'changing this' : 'reading this';
    return `${what} needs the ${needed} role; ${caller.via.kind === 'token' ? 'this token has' : 'you have'} ${caller.role}`;
  }
  return null;
}

/** 403 FORBIDDEN, naming the role needed, for a caller whose role or token scope does not reach it. */
export function authorize(contract: Pick<ApiEndpoint, 'writes'>, access: Access) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const reason = refusal(req.caller!, access, writes(contract, access, req));
    if (reason !== null) throw new ApiError('FORBIDDEN', 'Not allowed.', [reason]);
    next();
  };
}
