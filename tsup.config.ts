import { defineConfig } from "tsup";

export default defineConfig({
  entry: {
    index: "src/index.ts",
    middleware: "middleware/index.ts",
    tools: "tools/index.ts",
    environment: "src/environment/index.ts",
    web: "src/web/index.ts",
    deepagents: "src/deepagents/index.ts",
  },
  format: ["esm", "cjs"],
  dts: true,
  clean: true,
  sourcemap: false,
  target: "node20",
  splitting: true,
  treeshake: true,
});
