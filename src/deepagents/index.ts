// `langgraph-workbench/deepagents`: the deepagents backend. A subpath of its own so the root
// entry's types never import the optional peer `deepagents`.
export { WorkbenchBackend, type WorkbenchBackendOptions, type WorkbenchExecuteOptions } from "./backend.js";
