// Guards shared by the file tools (read_file, write_file, patch, search_files).
export * from "./access.js";
export * from "./binary.js";
export * from "./credentials.js";
export * from "./devices.js";
export * from "./redact.js";
export * from "./writeTargets.js";
export * from "./staleness.js";
