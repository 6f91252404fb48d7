/** Placeholder replaced below. */
import { NomadApiError } from './errors.js';
export function parseJobHcl(_text: string): unknown {
  throw new NomadApiError(500, 'fake Nomad cannot parse HCL');
}
