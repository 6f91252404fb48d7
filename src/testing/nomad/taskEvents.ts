/**
 * The task updates a Nomad client reports as a task moves (client/allocrunner/taskrunner): the
 * events with their DisplayMessage and Details as 1.1.2 writes them, and the state they lead to.
 */
import type { TaskEventInput } from './objects.js';

export interface TaskUpdate {
  State?: 'pending' | 'running' | 'dead';
  Failed?: boolean;
  events?: TaskEventInput[];
  /** When it happened on the client (ms; default: when applied): event times, StartedAt, FinishedAt. */
  at?: number;
}

/** The "Terminated" event of a task that exited with `exitCode`. */
export function exited(exitCode: number): TaskEventInput {
  return { Type: 'Terminated', DisplayMessage: `Exit Code: ${exitCode}`, ExitCode: exitCode, Details: { exit_code: String(exitCode), oom_killed: 'false', signal: '0' } };
}

/**
 * The "Terminated" event of a task the kernel killed for its memory, as the task runner writes it
 * (SetExitCode, SetSignal, SetOOMKilled, SetExitMessage): the docker driver's exit code 137 and its
 * "OOM Killed" exit message.
 */
export function oomKilled(exitCode = 137): TaskEventInput {
  const message = 'OOM Killed';
  return {
    Type: 'Terminated',
    DisplayMessage: `Exit Code: ${exitCode}, Exit Message: ${JSON.stringify(message)}`,
    ExitCode: exitCode,
    Message: message,
    Details: { exit_code: String(exitCode), signal: '0', oom_killed: 'true', exit_message: message },
  };
}

export function received(): TaskUpdate {
  return {
    State: 'pending',
    events: [
      { Type: 'Received', DisplayMessage: 'Task received by client' },
      { Type: 'Task Setup', Message: 'Building Task Directory', Details: { message: 'Building Task Directory' } },
    ],
  };
}

export function started(): TaskUpdate {
  return { State: 'running', events: [{ Type: 'Started', DisplayMessage: 'Task started by client' }] };
}

/** Exited and restarting within the restart policy: pending again until it starts. */
export function restarting(exit: TaskEventInput, delayMs: number): TaskUpdate {
  const delayNs = Math.round(delayMs * 1e6);
  const reason = 'Restart within policy';
  return {
    State: 'pending',
    events: [exit, { Type: 'Restarting', DisplayMessage: `Task restarting in ${delayMs / 1000}s`, RestartReason: reason, StartDelay: delayNs, Details: { restart_reason: reason, start_delay: String(delayNs) } }],
  };
}

/** Exited with no restart left: dead and failed (`reason`: the restart tracker's, restarts.go). */
export function notRestarting(exit: TaskEventInput, reason = 'Policy allows no restarts'): TaskUpdate {
  return {
    State: 'dead',
    Failed: true,
    events: [exit, { Type: 'Not Restarting', DisplayMessage: reason, RestartReason: reason, FailsTask: true, Details: { fails_task: 'true', restart_reason: reason } }],
  };
}

/** The client starts killing a task (a stop): it goes on running until it exits. */
export function killing(): TaskUpdate {
  return { events: [{ Type: 'Killing', DisplayMessage: 'Sent interrupt. Waiting 5s before force killing', KillTimeout: 5_000_000_000, Details: { kill_timeout: '5s' } }] };
}

/** The killed task exited on signal 2 and is dead. */
export function killedAfterKilling(): TaskUpdate {
  return {
    State: 'dead',
    events: [
      { ...exited(130), Signal: 2, DisplayMessage: 'Exit Code: 130, Signal: 2', Details: { exit_code: '130', oom_killed: 'false', signal: '2' } },
      { Type: 'Killed', DisplayMessage: 'Task successfully killed' },
    ],
  };
}

/** Stopped by the client: interrupt, exit on signal 2, killed. */
export function killed(): TaskUpdate {
  return { State: 'dead', events: [...killing().events!, ...killedAfterKilling().events!] };
}

/** The client's health tracker gave up on the allocation (client/allochealth): its event on a task. */
export function allocUnhealthy(message = 'Unhealthy because of failed task'): TaskUpdate {
  return { events: [{ Type: 'Alloc Unhealthy', Message: message, DisplayMessage: message }] };
}
