export * from "./client.js";
export * from "./errors.js";
export type * from "./types.js";
export * from "./fastfail.js";
export * from "./daemon.js";
