/** Prometheus metrics of a supervisor (prom-client), and the /metrics endpoint. */
export { WardenMetrics, type WardenMetricsOptions } from './wardenMetrics.js';
export { METRICS_PATH, handleMetricsRequest, parseListenAddress, serveMetrics, type ListenAddress, type MetricsServer } from './server.js';
export { EXEC_BYTES_CHANNEL, type ExecBytesMessage } from '../nomad/exec/bytesChannel.js';
