/**
 * The machines drawn into visualizations/<name>.mmd. One line per machine: add yours here.
 */
import type { AnyStateMachine } from 'xstate';
import { allocationHealthMachine } from '../../machines/allocationHealth.js';
import { evaluationMachine } from '../../machines/evaluation.js';
import { execSessionMachine } from '../../machines/execSession.js';
import { supervisorMachine } from '../../machines/supervisor.js';

export const visualizedMachines: Readonly<Record<string, AnyStateMachine>> = {
  allocationHealth: allocationHealthMachine,
  evaluation: evaluationMachine,
  execSession: execSessionMachine,
  supervisor: supervisorMachine,
};
