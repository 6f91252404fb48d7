/**
 * The machines drawn into visualizations/<name>.mmd. One line per machine: add yours here.
 */
import type { AnyStateMachine } from 'xstate';
import { allocationHealthMachine } from '../../machines/allocationHealth.js';
import { evaluationMachine } from '../../machines/evaluation.js';
import { supervisorMachine } from '../../machines/supervisor.js';

export const visualizedMachines: Readonly<Record<string, AnyStateMachine>> = {
  allocationHealth: allocationHealthMachine,
  evaluation: evaluationMachine,
  supervisor: supervisorMachine,
};
