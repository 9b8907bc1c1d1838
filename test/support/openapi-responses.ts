import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/**
 * Checks responses against the gateway's own /v1/openapi.json: the document must be valid
 * OpenAPI 3.1, and every response a test sees must match the schema documented for its path,
 * method and status.
 */
export async function openApiResponseChecker(document: unknown) {
  const validator = new Validator();
  const validity = await validator.validate(document as Parameters<Validator['validate']>[0]);
  if (!validity.valid)
    throw new Error(`openapi.json is not valid OpenAPI: ${JSON.stringify(validity.errors).slice(0, 2000)}`);
  const resolved = validator.resolveRefs() as {
    paths: Record<
      string,
      Record<
        string,
        {
          requestBody?: { content: Record<string, { schema: object }> };
          responses: Record<string, { content?: Record<string, { schema: object }> }>;
        }
      >
    >;
  };
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  const compiled = new Map<string, ReturnType<Ajv2020['compile']>>();
  const seen = new Set<string>();

  return {
    version: validator.version,
    /** Throws unless `body` matches the documented response; returns the key it checked. */
    check(path: string, method: 'get' | 'post' | 'put' | 'patch' | 'delete', status: number, body: unknown): string {
      const key = `${method} ${path} ${status}`;
      const response = resolved.paths[path]?.[method]?.responses[String(status)];
      if (!response) throw new Error(`${key} is not documented`);
      const schema = response.content?.['application/json']?.schema;
      if (!schema) throw new Error(`${key} documents no JSON body`);
      let validate = compiled.get(key);
      if (!validate) compiled.set(key, (validate = ajv.compile(schema)));
      if (!validate(body))
        throw new Error(`${key} does not match its documented schema: ${ajv.errorsText(validate.errors)}`);
      seen.add(key);
      return key;
    },
    /** Throws unless `body` matches the documented JSON request body of the operation. */
    checkRequest(path: string, method: 'post' | 'put' | 'patch', body: unknown): void {
      const key = `${method} ${path} request`;
      const schema = resolved.paths[path]?.[method]?.requestBody?.content['application/json']?.schema;
      if (!schema) throw new Error(`${key} documents no JSON request body`);
      let validate = compiled.get(key);
      if (!validate) compiled.set(key, (validate = ajv.compile(schema)));
      if (!validate(body))
        throw new Error(`${key} does not match its documented schema: ${ajv.errorsText(validate.errors)}`);
    },
    seen,
    documented(): string[] {
      return Object.entries(resolved.paths).flatMap(([path, item]) =>
        Object.entries(item).flatMap(([method, op]) =>
          Object.keys(op.responses).map((status) => `${method} ${path} ${status}`),
        ),
      );
    },
  };
}
