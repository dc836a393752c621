export * from "./locked.js";
export * from "./registry.js";
export * from "./invoke.js";
export * from "./builtins.js";
