// Public API of "langgraph-workbench/middleware".
export {};
