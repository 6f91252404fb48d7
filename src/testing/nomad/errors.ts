/** An answer Nomad gives as an HTTP error: the status and its plain-text body, exactly as Nomad writes them. */
export class NomadApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(body);
    this.name = 'NomadApiError';
  }
}
