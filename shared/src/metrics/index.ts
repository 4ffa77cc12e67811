// The workers' /metrics registry (Prometheus text), shared so the operator's monitoring tests read what a worker writes.
export * from './prometheus-registry.js';
export * from './worker-metrics.js';
