export * from "./locked.js";
export * from "./registry.js";
export * from "./invoke.js";
export * from "./builtins.js";
export * from "./toolset.js";
export * from "./toolset-report.js";
export * from "./profiles.js";
export * from "./trust.js";
export type { LoadProblem } from "./loader.js";
