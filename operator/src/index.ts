// The operator as a library: the gateway runs it in-process on one machine
// (embedded adapters); operator/src/main.ts runs it as its own process.
export const OPERATOR_PACKAGE = '@sluice/operator';
export * from './controller/controller.js';
export * from './controller/events.js';
export * from './controller/informer.js';
export * from './controller/logger.js';
export * from './reconcile/actions.js';
export * from './runtime/process-runtime.js';
// The read side of the Deployment runtime: the gateway serves worker logs on Kubernetes with it.
export { DeploymentWorkers, type DeploymentWorkersOptions } from './runtime/deployment-workers.js';
// The write side too, for the tests of other packages that need workers as Deployments.
export { DeploymentRuntime, type DeploymentRuntimeOptions } from './runtime/deployment-runtime.js';
export { defaultPodTemplate, deploymentName } from './runtime/worker-deployment.js';
export * from './work-queue.js';
