import { z } from 'zod';
import {
  budgetFileSchema,
  cellCheckSchema,
  cruxPairSchema,
  DEVICES,
  LOCATIONS,
  UPDATE_TYPES,
  missingCellSchema,
  runSummarySchema,
  updateProgressSchema,
} from '@perfwatch/common';
import {
  DELIVERY_STATUSES,
  UPDATE_STATUSES,
  WEBHOOK_FORMATS,
  type AnnotationRecord,
  type DeliveryRecord,
  type ProjectRecord,
  type SnapshotRecord,
  type StoredCell,
  type TokenRecord,
  type UpdateRecord,
  type UserRecord,
  type WebhookRecord,
} from './store.ts';
import { storedResultJson, withStoredResult } from '../snapshots/result-bytes.ts';

/**
 * How a backend keeps what is not a plain string or number: an id (an ObjectId in MongoDB,
 * text in SQLite), a time (a date, or milliseconds) and a structured field (a document's own
 * array or object, or JSON text in a column).
 */
export interface StoredForms {
  id: z.ZodType<string>;
  time: z.ZodType<Date>;
  structured: <T extends z.ZodType>(schema: T) => z.ZodType<z.output<T>>;
}

/**
 * The records both stores read back, written once: each backend gives its stored forms and
 * names its fields as the records do (`_id` and snake_case columns renamed before parsing).
 * What is read back is parsed like any other input: a document or row written by another
 * version, or by hand, fails loudly here instead of deep inside a handler. Defaults stand for
 * fields that records of earlier versions lack, and for nulls a MongoDB-wire server may drop.
 */
export function recordSchemas(forms: StoredForms) {
  return {
    ...accountRecords(forms),
    ...webhookRecords(forms),
    ...snapshotRecords(forms),
    update: updateRecord(forms),
    kpi: kpiRecord(forms),
  };
}

/** What every record with an id of its own has. */
const ownId = ({ id, time }: StoredForms) => ({ id, createdAt: time });

/** Users, their tokens and their projects. */
function accountRecords(forms: StoredForms) {
  const { id, time, structured } = forms;
  const stored = ownId(forms);
  const user = z.object({ ...stored, name: z.string() }) satisfies z.ZodType<UserRecord>;
  const token = z.object({
    prefix: z.string(),
    userId: id,
    digest: z.string(),
    createdAt: time,
    revokedAt: time.nullable(),
    // Absent on tokens issued before tokens could expire: they never do.
    expiresAt: time.nullable().default(null),
  }) satisfies z.ZodType<TokenRecord>;
  const project = z.object({
    ...stored,
    userId: id,
    url: z.string(),
    domain: z.string(),
    locations: structured(z.array(z.enum(LOCATIONS)).min(1)),
    defaultLocation: z.enum(LOCATIONS),
    runs: z.number().int().positive(),
    schedule: z.string().nullable(),
    // Absent on projects stored before budgets were.
    budgets: structured(budgetFileSchema).default({ budgets: {}, maxRegression: {} }),
    auth: z.string().nullable().default(null),
  }) satisfies z.ZodType<ProjectRecord>;
  return { user, token, project };
}

/** Webhooks, their deliveries, and the deploy markers (annotations) on a project. */
function webhookRecords(forms: StoredForms) {
  const { id, time } = forms;
  const stored = ownId(forms);
  const webhook = z.object({
    ...stored,
    userId: id,
    targetUrl: z.string(),
    projectUrl: z.string().nullable(),
    format: z.enum(WEBHOOK_FORMATS),
    secret: z.string(),
  }) satisfies z.ZodType<WebhookRecord>;
  const delivery = z.object({
    // The delivery's own key, not a generated id: its webhook and event.
    id: z.string(),
    webhookId: id,
    userId: id,
    event: z.string(),
    body: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number().int(),
    nextAttemptAt: time,
    lastError: z.string().nullable().default(null),
    createdAt: time,
    deliveredAt: time.nullable().default(null),
  }) satisfies z.ZodType<DeliveryRecord>;
  const annotation = z.object({
    ...stored,
    projectId: id,
    date: time,
    text: z.string(),
    link: z.string().nullable(),
  }) satisfies z.ZodType<AnnotationRecord>;
  return { webhook, delivery, annotation };
}

/** A snapshot, and each of its cells without its Lighthouse result's bytes (each backend reads those its own way). */
function snapshotRecords({ id, time, structured }: StoredForms) {
  const snapshot = z.object({
    id,
    projectId: id,
    updateId: z.string(),
    url: z.string(),
    date: time,
    updateType: z.enum(UPDATE_TYPES),
    available: structured(z.array(z.object({ device: z.enum(DEVICES), location: z.enum(LOCATIONS) }))),
    missing: structured(z.array(missingCellSchema)).default([]),
  });
  const result = z.object({
    device: z.enum(DEVICES),
    location: z.enum(LOCATIONS),
    median: z.number().int().positive(),
    runs: structured(z.array(runSummarySchema)),
    elementCount: z.number().int().nullable(),
    crux: structured(cruxPairSchema),
    checks: structured(z.array(cellCheckSchema)).nullish(),
  });
  return { snapshot, result };
}

function updateRecord({ id, time, structured }: StoredForms) {
  return (
    z
      .object({
        id: z.string(),
        userId: id,
        projectId: id,
        url: z.string(),
        devices: structured(z.array(z.enum(DEVICES))),
        locations: structured(z.array(z.enum(LOCATIONS))),
        updateType: z.enum(UPDATE_TYPES),
        status: z.enum(UPDATE_STATUSES),
        date: time.nullish(),
        reason: z.string().nullish(),
        attempts: z.number().int(),
        // Absent on updates of earlier versions: one run per cell.
        runs: z.number().int().positive().default(1),
        // A flag or SQLite's 0 / 1; absent on updates of earlier versions (admitted).
        waiting: z.union([z.boolean(), z.number().int()]).default(false),
        admittedAt: time.nullish(),
        progress: structured(z.array(updateProgressSchema)).default([]),
        missing: structured(z.array(missingCellSchema)).default([]),
        createdAt: time,
        updatedAt: time,
      })
      // An update of an earlier version, which had no backlog, was admitted when it was created.
      .transform(({ date, reason, waiting, admittedAt, ...rest }): UpdateRecord => ({
        ...rest,
        date: date ?? null,
        reason: reason ?? null,
        admittedAt: waiting ? null : (admittedAt ?? rest.createdAt),
      }))
  );
}

/** A KPI record's place and name; each backend adds its data as it keeps it. */
function kpiRecord({ time }: StoredForms) {
  return z.object({
    date: time,
    domain: z.string(),
    url: z.string(),
    device: z.enum(DEVICES),
    location: z.enum(LOCATIONS),
    updateType: z.enum(UPDATE_TYPES),
    section: z.string(),
    kpi: z.string(),
  });
}

/**
 * A stored cell whose result stays in the database: `fetchGzip` reads its bytes when the cell's
 * result is asked for, and nothing keeps them (findSnapshotCells).
 */
export function cellReadLater(
  { checks, ...cell }: z.output<ReturnType<typeof recordSchemas>['result']>,
  fetchGzip: () => Promise<Uint8Array>,
): StoredCell {
  return { ...cell, ...(checks ? { checks } : {}), resultJson: async () => storedResultJson(await fetchGzip()) };
}

/** A stored cell as a store hands it out: its Lighthouse result read from `bytes` only when asked for. */
export function storedCell(
  { checks, ...cell }: z.output<ReturnType<typeof recordSchemas>['result']>,
  bytes: Uint8Array,
): SnapshotRecord['results'][number] {
  return withStoredResult({ ...cell, ...(checks ? { checks } : {}), kpis: [] }, bytes);
}
