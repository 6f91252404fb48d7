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
export { InspectionModel, type DeltaListener, type InspectionModelOptions } from './model.js';
export {
  INSPECTOR_SCHEMA_VERSION,
  type AllocationInfo,
  type ConnectionInfo,
  type DeploymentGroupInfo,
  type DeploymentInfo,
  type EvaluationInfo,
  type ExecSessionInfo,
  type FollowRequest,
  type InspectorDelta,
  type InspectorMessage,
  type InspectorSnapshot,
  type IsoTime,
  type LiveMessage,
  type PolicyInfo,
  type ProblemInfo,
  type TaskInfo,
  type TimelineEntry,
  type TimelineInfo,
  type TimelineMessage,
  type TimelineResponse,
  type VerdictInfo,
} from './schema.js';
export { InspectorServer, InspectorServerError, type ClientBacklog, type InspectorServerOptions } from './server.js';
export { chartDiagram, chartGraph, type ChartArrow, type ChartDiagram, type ChartEdge, type ChartGraph } from './chart.js';
export { stateChart, type StateChart } from './chartSvg.js';
export { escapeHtml } from './escape.js';
export { startInspector, type Inspector, type StartInspectorOptions } from './inspector.js';
