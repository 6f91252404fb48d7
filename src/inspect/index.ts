/**
 * The inspector: see, live in a browser, why each allocation is (un)healthy.
 *
 *   const model = new InspectionModel({ clock, secrets: [config.token] });
 *   const supervisor = createSupervisor({ nomad, clock, inspect: model.inspect });
 *   const detach = model.attach(supervisor);
 *   const server = await InspectorServer.start({ model, port: 0 });
 *   console.log(server.url);
 *   // …
 *   await server.close(); detach();
 */
export {
  InspectionModel,
  type AllocationInfo,
  type ConnectionInfo,
  type DeltaListener,
  type EvaluationInfo,
  type ExecSessionInfo,
  type InspectionModelOptions,
  type InspectorDelta,
  type InspectorMessage,
  type InspectorSnapshot,
  type ProblemInfo,
  type TaskInfo,
  type VerdictInfo,
} from './model.js';
export { InspectorServer, InspectorServerError, type ClientBacklog, type InspectorServerOptions } from './server.js';
export { chartGraph, stateChart, type ChartEdge, type ChartGraph, type StateChart } from './chart.js';
export { escapeHtml } from './escape.js';
export { startInspector, type Inspector, type StartInspectorOptions } from './inspector.js';
