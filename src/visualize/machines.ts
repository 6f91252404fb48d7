/**
 * The machines drawn into visualizations/<name>.mmd. One line per machine: add yours here.
 */
import type { AnyStateMachine } from 'xstate';
import { allocationHealthMachine } from '../../machines/allocationHealth.js';
import { environmentMachine } from '../../machines/environment.js';
import { evaluationMachine } from '../../machines/evaluation.js';
import { execSessionMachine } from '../../machines/execSession.js';
import { runnerMachine } from '../../machines/runner.js';
import { supervisorMachine } from '../../machines/supervisor.js';

export const visualizedMachines: Readonly<Record<string, AnyStateMachine>> = {
  allocationHealth: allocationHealthMachine,
  evaluation: evaluationMachine,
  environment: environmentMachine,
  execSession: execSessionMachine,
  runner: runnerMachine,
  supervisor: supervisorMachine,
};
