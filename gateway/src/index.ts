export { buildApp, allRoutes, DOCUMENTATION_PATHS } from './app.js';
export { loadConfig, type Config } from './config.js';
export { startGateway, createContext, createLogger, type RunningGateway } from './server.js';
