export * from "./modes.js";
export * from "./command-prefix.js";
export * from "./session-rules.js";
