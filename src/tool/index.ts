export * from "./kinds.js";
export * from "./requirements.js";
export * from "./errors.js";
export * from "./envelope.js";
export * from "./context.js";
export * from "./define.js";
export * from "./truncate.js";
