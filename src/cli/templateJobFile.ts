/**
 * `warden serve --template-job-file` (Poseidon's server.templatejobfile): a template job of the
 * operator's own, in HCL as Poseidon reads it (parsed by Nomad's own parser, POST /v1/jobs/parse,
 * HCL2 as Poseidon's jobspec2) or as the JSON of a job (`{"Job": …}` or the job itself, as `nomad
 * job run -output` writes it).
 */
import { readFile } from 'node:fs/promises';
import type { NomadClient } from '../nomad/client.js';
import { NomadConnectionError, NomadTimeoutError } from '../nomad/errors.js';
import type { Job } from '../nomad/types.js';
import { errorMessage } from '../errorMessage.js';

/** A template job file that can never be read as one (not found, not a job): the command line is wrong. */
export class TemplateJobFileError extends Error {
  override name = 'TemplateJobFileError';
}

function jobOfJson(text: string, path: string): Job {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new TemplateJobFileError(`template job file ${path}: not JSON: ${errorMessage(error)}`);
  }
  const job = (parsed as { Job?: unknown }).Job ?? parsed;
  if (typeof job !== 'object' || job === null || !Array.isArray((job as Job).TaskGroups)) {
    throw new TemplateJobFileError(`template job file ${path}: not a job (no TaskGroups)`);
  }
  return job as Job;
}

/**
 * Reads the file and makes a job of it. Rejects with TemplateJobFileError when the file is wrong
 * (missing, bad JSON, HCL Nomad refuses), or with the NomadError of a Nomad that does not answer
 * (worth trying again: see isRetryable).
 */
export async function readTemplateJobFile(path: string, nomad: NomadClient): Promise<Job> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new TemplateJobFileError(`template job file ${path}: ${fileError(error)}`);
  }
  if (text.trimStart().startsWith('{')) return jobOfJson(text, path);
  try {
    return await nomad.parseJob(text);
  } catch (error) {
    if (isRetryable(error)) throw error;
    throw new TemplateJobFileError(`template job file ${path}: ${errorMessage(error)}`);
  }
}

/** An fs error's own message (`ENOENT: no such file or directory, open …`), whatever realm made it. */
function fileError(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(error);
}

/** Nomad did not answer: parsing may work later (Warden retries it with its recovery). */
export function isRetryable(error: unknown): boolean {
  return error instanceof NomadConnectionError || error instanceof NomadTimeoutError;
}
