import { z } from 'zod';
import {
  storedBudgetsSchema,
  DEVICES,
  flowSchema,
  LOCATIONS,
  type Budgets,
  type Device,
  type Flow,
  type Location,
} from '@perfwatch/common';
import { ownId, type StoredForms } from '../../store/record-forms.ts';

export interface ProjectRecord {
  id: string;
  userId: string;
  url: string;
  domain: string;
  locations: Location[];
  defaultLocation: Location;
  runs: number;
  schedule: string | null;
  /** The devices an update measures when it names none, scheduled ones too; null: never set, both (DEVICES). */
  devices: Device[] | null;
  /** Whether updates ask CrUX for field data (when the gateway has a key); null: never set, as true. */
  crux: boolean | null;
  /** Budgets and allowed regressions every stored snapshot is checked against (none: empty). */
  budgets: Budgets;
  /** Cookies, headers and login steps for a page behind a login, sealed (secret-box.ts); null: none. */
  auth: string | null;
  /** The site whose sampled page it is (issue 34), made and removed by its discoveries; null: made by hand. */
  siteId: string | null;
  /** A user flow its updates run instead of a navigation of its URL (issue 36); null: none. */
  flow: Flow | null;
  createdAt: Date;
}

export type NewProject = Omit<
  ProjectRecord,
  'id' | 'createdAt' | 'budgets' | 'auth' | 'devices' | 'crux' | 'siteId' | 'flow'
> & {
  flow?: Flow | null;
  siteId?: string | null;
  budgets?: Budgets;
  auth?: string | null;
  devices?: Device[] | null;
  crux?: boolean | null;
};

/** What a project's owner may change after creating it (PATCH /v1/projects; its URL names it, so stays). */
export type ProjectSettings = Pick<
  ProjectRecord,
  'locations' | 'defaultLocation' | 'runs' | 'schedule' | 'devices' | 'crux'
>;

/** A user's projects, their budgets and sealed credentials. */
export interface ProjectsStore {
  addProject(project: NewProject): Promise<ProjectRecord>;
  findProject(userId: string, url: string): Promise<ProjectRecord | null>;
  listProjects(userId?: string): Promise<ProjectRecord[]>;
  /** Removes a project with its snapshots, results, KPI records, annotations and repository link. */
  removeProject(userId: string, url: string): Promise<boolean>;
  /** Replaces a project's locations, default location, runs, schedule, devices and CrUX opt-in. */
  setProjectSettings(projectId: string, settings: ProjectSettings): Promise<void>;
  /** Replaces a project's budgets. */
  setProjectBudgets(projectId: string, budgets: Budgets): Promise<void>;
  /** Replaces a project's flow (null: none, a navigation of its URL). */
  setProjectFlow(projectId: string, flow: Flow | null): Promise<void>;
  /** Replaces a project's sealed credentials (null: none). */
  setProjectAuth(projectId: string, sealed: string | null): Promise<void>;
  /**
   * Replaces a project's sealed credentials only while they are still `expected` (what the caller
   * read); false when another write came first, which then stands.
   */
  replaceProjectAuth(projectId: string, expected: string, sealed: string): Promise<boolean>;
}

/** A project without budgets has these: none, and no allowed regression (a new object each time). */
const noBudgets = (): Budgets => ({ budgets: {}, maxRegression: {} });

/** A new project's record: what it was given, its defaults, its id and when. */
export const newProjectRecord = (project: NewProject, id: string, createdAt: Date): ProjectRecord => ({
  ...project,
  locations: [...project.locations],
  devices: project.devices ? [...project.devices] : null,
  crux: project.crux ?? null,
  budgets: project.budgets ?? noBudgets(),
  auth: project.auth ?? null,
  siteId: project.siteId ?? null,
  flow: project.flow ?? null,
  id,
  createdAt,
});

/** The records of this slice as each backend reads them back (see record-forms.ts). */
export function projectRecords(forms: StoredForms) {
  const { id, structured } = forms;
  const project = z.object({
    ...ownId(forms),
    userId: id,
    url: z.string(),
    domain: z.string(),
    locations: structured(z.array(z.enum(LOCATIONS)).min(1)),
    defaultLocation: z.enum(LOCATIONS),
    runs: z.number().int().positive(),
    schedule: z.string().nullable(),
    // Absent on projects stored before they were settings (issue 33): today's behaviour.
    devices: structured(z.array(z.enum(DEVICES)).min(1))
      .nullable()
      .default(null),
    crux: structured(z.boolean()).nullable().default(null),
    // Absent on projects stored before budgets were.
    budgets: structured(storedBudgetsSchema).default(noBudgets),
    auth: z.string().nullable().default(null),
    // Absent on projects stored before sites were (issue 34): made by hand.
    siteId: id.nullable().default(null),
    // Absent on projects stored before flows were (issue 36): a navigation. The same schema as
    // a caller's, so a flow that is stored can always be read again.
    flow: structured(flowSchema).nullable().default(null),
  }) satisfies z.ZodType<ProjectRecord>;
  return { project };
}
