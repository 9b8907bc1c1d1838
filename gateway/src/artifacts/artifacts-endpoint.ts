import { z } from 'zod';
import { API_ENDPOINTS } from '@perfwatch/common';
import type { GatewayEndpoint } from '../http/endpoints.ts';
import { artifactsRoute } from './artifacts-route.ts';

/** `/v1/artifacts` as the gateway serves it (GATEWAY_ENDPOINTS): read as /v1/audit is, by a viewer or a ci token of the project. */
export const ARTIFACTS_ENDPOINT: GatewayEndpoint = {
  contract: API_ENDPOINTS.artifacts,
  limit: 'reads',
  access: { read: 'viewer', write: 'editor', ci: 'read' },
  route: ({ store, reads, artifacts, logger }) => artifactsRoute({ store, reads, artifacts, logger }),
  doc: {
    summary: "Read one cell's artifacts: its representative run's requests or trace, or its filmstrip",
    answer:
      'requests: NDJSON, one network request a line, then `{"end":true,…}`; trace: the DevTools trace as a file to open in Chrome DevTools or Perfetto (Content-Disposition: attachment); filmstrip: the screenshots taken while the page loaded. requests and trace are streamed as stored (gzip, Content-Encoding: gzip) when Accept-Encoding takes gzip, inflated otherwise.',
    answerTypes: {
      'application/x-ndjson': z.string().meta({ description: 'kind=requests: one JSON object a line.' }),
    },
    answerHeaders: {
      'Content-Encoding': 'gzip: requests and trace as stored, when Accept-Encoding takes gzip.',
      'Content-Disposition':
        'kind=trace: attachment; filename="perfwatch-<host>-<date>-<device>-<location>.trace.json".',
    },
    responses: {
      '404':
        'No project of the caller has that URL; no snapshot at that date, or no result of that device and location; or the artifact was not kept (why, in `errors`), has expired (past ARTIFACT_RETENTION_DAYS: when, in `errors`), or is no longer in the artifact store.',
      '503': {
        description:
          'The artifact store did not answer, or every place for reads of stored results (filmstrip) stayed taken; see Retry-After.',
        retryAfter: true,
      },
    },
  },
};
