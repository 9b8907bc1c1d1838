import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { API_ENDPOINTS, capitalizeUpdateType, formatApiDateTime, type OverviewRecord } from '@perfwatch/common';
import { parseRequest } from '../http/parse-request.ts';
import type { KpiRow, KpisStore } from './store/kpis-store.ts';
import { writeJsonPieces } from '../http/written.ts';
import { revisionMember } from '../store/stored-revision.ts';

const DAY_MS = 86_400_000;

/**
 * A KPI row as the JSON text of its OverviewRecord, members in the record's order. Written out
 * rather than JSON.stringify of an object: `data` is already JSON text, and parsing and
 * re-serialising a million of them was most of the overview's cost (bench/overview-memory.ts).
 * Its unit test holds it equal to JSON.stringify of the record.
 */
export function overviewRecordJson(row: KpiRow): string {
  const record: Omit<OverviewRecord, 'data'> = {
    date: formatApiDateTime(row.date),
    domain: row.domain,
    url: row.url,
    device: row.device,
    location: row.location,
    updateType: capitalizeUpdateType(row.updateType),
    section: row.section,
    kpi: row.kpi,
    ...(row.step !== undefined ? { step: row.step } : {}),
    ...revisionMember(row.revision),
  };
  return `${JSON.stringify(record).slice(0, -1)},"data":${row.dataJson}}`;
}

/**
 * `GET|POST /v1/overview`: the caller's KPI records in a date range. The JSON array is written
 * as the database cursor yields, respecting the socket's back-pressure, so the gateway's memory
 * stays flat for a million records. A failure after the first byte cannot become an error
 * envelope any more: the connection is cut, so a client never takes a truncated array for a
 * whole one. A client that stops reading for `stallMs` is cut off the same way, and the cursor
 * (or the embedded store's statement, with its read snapshot) is released: a reader who walks
 * away does not hold the database.
 */
export function overviewRoute({
  store,
  logger,
  stallMs,
}: {
  store: Pick<KpisStore, 'streamKpis'>;
  logger: Logger;
  stallMs: number;
}) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, API_ENDPOINTS.overview);
    const rows = store.streamKpis({
      userId: req.caller!.orgId,
      from: params.startDate,
      to: new Date(params.endDate.getTime() + DAY_MS),
      domain: params.domain,
      updateType: params.updateType,
      sections: params.sections?.map((s) => s.toUpperCase()),
      commit: params.commit,
      branch: params.branch,
      pullRequest: params.pullRequest,
    });
    const iterator = rows[Symbol.asyncIterator]();
    // The first read happens before any byte is sent, so a database that is down is still a 500 envelope.
    const first = await iterator.next();
    let count = 0;
    // One piece per batch of records: one await per batch, as the store reads them.
    async function* arrayText(): AsyncGenerator<string> {
      try {
        yield '[';
        for (let next = first; !next.done; next = await iterator.next()) {
          let text = '';
          for (const row of next.value) text += (count++ === 0 ? '' : ',') + overviewRecordJson(row);
          yield text;
        }
        yield ']';
      } finally {
        await iterator.return?.();
      }
    }
    res.status(200);
    const written = await writeJsonPieces(res, arrayText(), stallMs);
    if (written.end === 'stalled')
      logger.warn({ requestId: req.requestId, records: count, stallMs }, 'overview reader stopped reading; cut off');
    if (written.end === 'failed')
      logger.error({ err: written.error, requestId: req.requestId, records: count }, 'overview stream failed');
  };
}
