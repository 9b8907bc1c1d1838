import { describe, expect, it } from 'vitest';
import { API_ENDPOINTS } from '@perfwatch/common';
import { GATEWAY_ENDPOINTS } from './endpoints.ts';
import { createOpenApiDocument } from './openapi.ts';

describe('the endpoint table', () => {
  it('serves every endpoint of the API contract, each under its own name', () => {
    expect(Object.keys(GATEWAY_ENDPOINTS)).toEqual(Object.keys(API_ENDPOINTS));
    const contracts = Object.values(GATEWAY_ENDPOINTS).map((entry) => entry.contract);
    Object.values(API_ENDPOINTS).forEach((contract, i) => expect(contracts[i]).toBe(contract));
  });

  it('is what the OpenAPI document lists: its paths, their methods, a 405 for a GET that writes', () => {
    const { paths = {} } = createOpenApiDocument();
    expect(Object.keys(paths)).toEqual(Object.values(API_ENDPOINTS).map((e) => e.path));
    for (const endpoint of Object.values(API_ENDPOINTS)) {
      const item = paths[endpoint.path]!;
      expect(Object.keys(item).sort()).toEqual(endpoint.methods.map((m) => m.toLowerCase()).sort());
      expect(Object.keys(item.get?.responses ?? {}).includes('405'), endpoint.path).toBe('writes' in endpoint);
    }
  });
});
