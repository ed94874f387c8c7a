import { FILE_HEADERS_ONLY, createTwoFilesPatch } from "diff";

/** A unified diff (3 lines of context) of one file, headed `--- a/path` / `+++ b/path`. */
export function unifiedDiff(path: string, before: string, after: string): string {
  const shown = path.replace(/\\/g, "/").replace(/^\/+/, "");
  return createTwoFilesPatch(`a/${shown}`, `b/${shown}`, before, after, undefined, undefined, {
    context: 3,
    headerOptions: FILE_HEADERS_ONLY,
  });
}
