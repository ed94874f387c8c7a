// Public API of "langgraph-workbench/tools".
export {};
