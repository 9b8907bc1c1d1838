/** Test locations, in the order the spec lists them. */
export const LOCATIONS = ['s_carolina', 'los_angeles', 'frankfurt', 'london', 'tokyo', 'sao_paulo'] as const;
export type Location = (typeof LOCATIONS)[number];

export const DEVICES = ['mobile', 'desktop'] as const;
export type Device = (typeof DEVICES)[number];

export const UPDATE_TYPES = ['manual', 'scheduled', 'ci'] as const;
export type UpdateType = (typeof UPDATE_TYPES)[number];

export const UPDATE_MODES = ['sync', 'async'] as const;
