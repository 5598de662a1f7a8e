/**
 * A problem found in the manifests, as validate prints it and as a resource's Invalid status carries
 * it. `file` is relative to the manifests root, with `/`; line and col are 1-based.
 */
export type Problem = {
  file: string;
  line: number;
  col: number;
  /** `Kind/name`, when the document got that far. */
  resource?: string;
  /** The field path, like `spec.tiles[1].key`, when one field is at fault. */
  field?: string;
  message: string;
};

/** `file:line:col  Kind/name  message`, as docs/cli.md shows; `-` stands for an unknown resource. */
export function formatProblem(problem: Problem): string {
  const message = problem.field ? `${problem.field}: ${problem.message}` : problem.message;
  return `${problem.file}:${problem.line}:${problem.col}  ${problem.resource ?? "-"}  ${message}`;
}

/** Sorts problems by file, line and column, so output does not depend on the order files were read. */
export function sortProblems(problems: Problem[]): Problem[] {
  return problems.sort(
    (a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0) || a.line - b.line || a.col - b.col,
  );
}
