/**
 * The node and server endpoints a client reads the cluster's release and a node's record from:
 * GET /v1/nodes (NodeListStubs with each client's Version), GET /v1/node/:id (attributes and meta,
 * `nomad.version` among them), GET /v1/agent/members (the servers, their release in Tags.build).
 * One node, the fake's own.
 */
import type { ClusterState } from './clusterState.js';
import type { JsonObject } from './jobSpec.js';
import type { Route, RouteContext } from './routes.js';
import { sendJson, sendText } from './wire.js';

/** The node's drivers as a dev agent fingerprints them: docker not detected unless named among the node's drivers. */
function drivers(cluster: ClusterState): JsonObject {
  const found: JsonObject = {};
  for (const name of new Set(['docker', ...cluster.nodeDrivers])) {
    const healthy = cluster.nodeDrivers.includes(name);
    found[name] = { Attributes: null, Detected: healthy, Healthy: healthy, HealthDescription: healthy ? 'Healthy' : 'Failed to connect to docker daemon', UpdateTime: '2026-01-01T00:00:00Z' };
  }
  return found;
}

function nodeStub(cluster: ClusterState): JsonObject {
  const { node } = cluster;
  return {
    Address: '127.0.0.1', CreateIndex: 1, Datacenter: node.Datacenter, Drain: false, Drivers: drivers(cluster), ID: cluster.nodeId, LastDrain: null,
    ModifyIndex: 1, Name: cluster.nodeName, NodeClass: node.NodeClass, NodePool: node.NodePool, SchedulingEligibility: 'eligible', Status: 'ready',
    StatusDescription: '', Version: cluster.features.version,
  };
}

function nodeRecord(cluster: ClusterState): JsonObject {
  const { node } = cluster;
  return {
    ...nodeStub(cluster),
    Attributes: { ...node.Attributes, 'nomad.version': cluster.features.version },
    Meta: { ...node.Meta },
    HTTPAddr: '127.0.0.1:4646',
  };
}

const answer = (ctx: RouteContext, value: unknown): void => sendJson(ctx.req, ctx.res, value, { index: ctx.cluster.index, query: true });

export const NODE_ROUTES: readonly Route[] = [
  { methods: ['GET'], pattern: /^\/v1\/nodes$/, handler: (ctx) => answer(ctx, [nodeStub(ctx.cluster)]) },
  {
    methods: ['GET'],
    pattern: /^\/v1\/node\/([^/]+)$/,
    handler: (ctx) => {
      const id = decodeURIComponent(ctx.params[0] ?? '');
      if (id !== ctx.cluster.nodeId) sendText(ctx.req, ctx.res, 404, 'node not found', { index: ctx.cluster.index, query: true });
      else answer(ctx, nodeRecord(ctx.cluster));
    },
  },
  {
    methods: ['GET'],
    pattern: /^\/v1\/agent\/members$/,
    handler: (ctx) =>
      sendJson(ctx.req, ctx.res, {
        ServerName: `${ctx.cluster.nodeName}.global`, ServerRegion: 'global', ServerDC: 'dc1',
        Members: [{ Name: `${ctx.cluster.nodeName}.global`, Addr: '127.0.0.1', Port: 4648, Status: 'alive', Tags: { build: ctx.cluster.features.version, dc: 'dc1', region: 'global', role: 'nomad' } }],
      }),
  },
];
