// The shape of src/ in figures, read with the TypeScript compiler API: the functions longer than 60
// lines, and the `as` expressions by kind (`as const`, `as unknown as T`, any other type assertion).
// `node scripts/code-shape.mjs [--list]`; --list also names every type assertion.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

const LONG = 60;
const root = new URL("..", import.meta.url).pathname;
const files = readdirSync(join(root, "src"), { recursive: true, withFileTypes: true })
  .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
  .map((entry) => join(entry.parentPath, entry.name));

const long = [];
const casts = { asConst: 0, unknownAs: 0, assertion: [] };
for (const file of files) {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const where = (node) =>
    `${relative(root, file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
  const lines = (node) =>
    source.getLineAndCharacterOfPosition(node.getEnd()).line -
    source.getLineAndCharacterOfPosition(node.getStart()).line +
    1;
  const visit = (node) => {
    if (ts.isFunctionLike(node) && node.body && lines(node) > LONG)
      long.push({ at: where(node), lines: lines(node) });
    if (ts.isAsExpression(node)) count(node, where);
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

const total = casts.asConst + casts.unknownAs + casts.assertion.length;
console.log(`functions over ${LONG} lines: ${long.length}`);
for (const f of long.sort((a, b) => b.lines - a.lines))
  console.log(`  ${String(f.lines).padStart(4)}  ${f.at}`);
console.log(
  `as: ${total} (as const ${casts.asConst}, as unknown as ${casts.unknownAs}, type assertions ${casts.assertion.length})`,
);
if (process.argv.includes("--list")) for (const line of casts.assertion) console.log(`  ${line}`);
