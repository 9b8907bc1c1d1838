import { type Device, type LighthouseResult } from '@perfwatch/common';
/**
 * Real Lighthouse 13 results of the fixture site (scripts/capture-lhr-fixtures.ts), three per
 * device. Each call returns a fresh copy a test may change.
 */
export declare function loadLhr(device: Device, run: 1 | 2 | 3): LighthouseResult;
export declare function loadLhrs(device: Device): LighthouseResult[];
