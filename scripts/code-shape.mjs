// The shape of src/ in figures, read with the TypeScript compiler API:
// - import cycles between the modules of src/ (type-only imports count: a circle of types is a circle);
// - branches on a manifest kind outside the kind modules (src/kinds/): `x.kind === "DataPipe"`,
//   `case "DataPipe":`, each a fact a total table per kind could hold;
// - answers widened to `unknown` (`Answer<unknown>`, `as unknown`): a type the route's schema gave, lost;
// - functions longer than 60 lines;
// - the `as` expressions by kind (`as const`, `as unknown as T`, any other type assertion).
// `node scripts/code-shape.mjs [--list] [--json]`; --list also names every type assertion and branch,
// --json prints the figures as one JSON document (test/code-shape.test.ts reads it).
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

const LONG = 60;
const root = new URL("..", import.meta.url).pathname;
const src = join(root, "src");
const files = readdirSync(src, { recursive: true, withFileTypes: true })
  .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
  .map((entry) => join(entry.parentPath, entry.name));

/** The manifest kinds, read from the schema files' `manifestDocument("Kind", ...)` calls. */
const KINDS = new Set(
  files.flatMap((file) =>
    [...readFileSync(file, "utf8").matchAll(/manifestDocument\("(\w+)"/g)].map((match) => match[1]),
  ),
);

const long = [];
const casts = { asConst: 0, unknownAs: 0, assertion: [] };
const branches = [];
const widened = [];
const imports = new Map();

for (const file of files) {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const where = (node) =>
    `${relative(root, file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
  const lines = (node) =>
    source.getLineAndCharacterOfPosition(node.getEnd()).line -
    source.getLineAndCharacterOfPosition(node.getStart()).line +
    1;
  const inKinds = relative(src, file).startsWith("kinds/");
  imports.set(file, importsOf(source, file));
  const visit = (node) => {
    if (ts.isFunctionLike(node) && node.body && lines(node) > LONG)
      long.push({ at: where(node), lines: lines(node) });
    if (ts.isAsExpression(node)) count(node, where);
    if (!inKinds && isKindBranch(node)) branches.push(where(node));
    if (isWidenedAnswer(node)) widened.push(where(node));
    ts.forEachChild(node, visit);
  };
  visit(source);
}

/** `x as unknown as T` counts once (at its outer `as`); `as const` is no assertion at all. */
function count(node, where) {
  const type = node.type.getText();
  const innerUnknown = ts.isAsExpression(node.expression) && node.expression.type.getText() === "unknown";
  const outerOfUnknown = type === "unknown" && ts.isAsExpression(node.parent);
  if (type === "const") casts.asConst++;
  else if (innerUnknown) casts.unknownAs++;
  else if (!outerOfUnknown) casts.assertion.push(`${where(node)}  as ${type}`);
}

/** `a.kind === "Kind"` (or !==) and `case "Kind":`, for a manifest kind. */
function isKindBranch(node) {
  const isKindName = (n) => ts.isStringLiteral(n) && KINDS.has(n.text);
  if (ts.isCaseClause(node)) return isKindName(node.expression);
  if (!ts.isBinaryExpression(node)) return false;
  const op = node.operatorToken.kind;
  if (op !== ts.SyntaxKind.EqualsEqualsEqualsToken && op !== ts.SyntaxKind.ExclamationEqualsEqualsToken)
    return false;
  const kindOf = (n) => ts.isPropertyAccessExpression(n) && n.name.text === "kind";
  return (isKindName(node.left) && kindOf(node.right)) || (isKindName(node.right) && kindOf(node.left));
}

/** `Answer<unknown>`, or an `as unknown` that is not the first half of `as unknown as T`. */
function isWidenedAnswer(node) {
  if (ts.isTypeReferenceNode(node) && node.typeName.getText() === "Answer")
    return node.typeArguments?.[0]?.getText() === "unknown";
  return ts.isAsExpression(node) && node.type.getText() === "unknown" && !ts.isAsExpression(node.parent);
}

/** The files of src/ that `source` imports or re-exports (type-only ones too). */
function importsOf(source, file) {
  const found = [];
  for (const statement of source.statements) {
    const specifier = statement.moduleSpecifier;
    if (!specifier || !ts.isStringLiteral(specifier) || !specifier.text.startsWith(".")) continue;
    found.push(resolve(dirname(file), specifier.text.replace(/\.js$/, ".ts")));
  }
  return found;
}

/** The import cycles: each strongly connected set of more than one module (Tarjan), sorted. */
function cycles(graph) {
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const connect = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      component.push(relative(root, w));
    } while (w !== v);
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) connect(v);
  return found;
}

const circles = cycles(imports);
const total = casts.asConst + casts.unknownAs + casts.assertion.length;
const figures = {
  importCycles: circles,
  kindBranches: branches,
  widenedAnswers: widened,
  longFunctions: long.sort((a, b) => b.lines - a.lines),
  assertions: { total, asConst: casts.asConst, unknownAs: casts.unknownAs, other: casts.assertion },
};

if (process.argv.includes("--json")) {
  console.log(JSON.stringify(figures, null, 2));
} else {
  const list = process.argv.includes("--list");
  console.log(`import cycles in src/: ${circles.length}`);
  for (const circle of circles) console.log(`  ${circle.join(" → ")}`);
  console.log(`branches on a kind outside src/kinds/: ${branches.length}`);
  if (list) for (const at of branches) console.log(`  ${at}`);
  console.log(`answers widened to unknown: ${widened.length}`);
  for (const at of widened) console.log(`  ${at}`);
  console.log(`functions over ${LONG} lines: ${long.length}`);
  for (const f of figures.longFunctions) console.log(`  ${String(f.lines).padStart(4)}  ${f.at}`);
  console.log(
    `as: ${total} (as const ${casts.asConst}, as unknown as ${casts.unknownAs}, type assertions ${casts.assertion.length})`,
  );
  if (list) for (const line of casts.assertion) console.log(`  ${line}`);
}
