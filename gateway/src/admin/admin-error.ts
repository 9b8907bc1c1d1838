/** A refusal of an admin operation, in words for whoever ran it (the CLI exits 1 with it). */
export class AdminError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AdminError';
  }
}
