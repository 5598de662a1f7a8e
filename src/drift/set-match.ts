/**
 * Whether two lists hold the same entries in any order, as compare.ts's walk judges one entry against
 * another (a desired entry matches a live one when every field it states is equal, fields the live entry
 * leaves out and credentials excepted), in time linear in the lists' sizes: each desired entry is
 * reduced to its shape (which fields it states, the lengths of its lists) and its values, each live
 * entry to the same fields, and the two meet in hash maps. Comparing every entry with every other, as
 * before, took 46 s for 20,000 entries and held the event loop all that time.
 */

/** What of a desired entry is never compared: a credential's field, a secret reference. */
export type Wildcards = {
  field(key: string): boolean;
  value(value: unknown): boolean;
};

/** One node of a desired entry, in pre-order: where it is, and what the live node must be there. */
type Step = {
  parent: number;
  key: string | number;
  kind: "object" | "list" | "scalar";
  /** list: its length; scalar: its ordinal among the entry's scalars. */
  n: number;
};

/** A desired entry as its shape (the steps, as text and as data) and its scalars' values (scalarOf). */
type Reduced = { shape: string; steps: Step[]; values: string[] };

/** What a live node that is a list or an object yields at a scalar step: equal to no desired scalar. */
const NOT_SCALAR = "<list or object>";

/**
 * The entries of `want` that match no entry of `have`, and the entries of `have` that match no entry
 * of `want`, counted; 0 and 0 when the lists hold the same set.
 */
export function unmatched(
  want: readonly unknown[],
  have: readonly unknown[],
  wildcards: Wildcards,
): { missing: number; extra: number } {
  const shapes = new Map<string, Reduced[]>();
  for (const entry of want) {
    const reduced = reduce(entry, wildcards);
    const group = shapes.get(reduced.shape);
    if (group) group.push(reduced);
    else shapes.set(reduced.shape, [reduced]);
  }
  const matchedWant = new Set<Reduced>();
  const matchedHave = new Set<number>();
  for (const group of shapes.values()) {
    const { steps } = group[0] as Reduced;
    // Live entries by the scalars they have (a field left out matches anything), then by their values.
    const byPresent = new Map<string, Map<string, number[]>>();
    have.forEach((entry, index) => {
      const seen = observe(entry, steps);
      if (!seen) return;
      const byValues = byPresent.get(seen.mask) ?? new Map<string, number[]>();
      byPresent.set(seen.mask, byValues);
      const same = byValues.get(seen.key);
      if (same) same.push(index);
      else byValues.set(seen.key, [index]);
    });
    for (const [mask, byValues] of byPresent) {
      for (const reduced of group) {
        const key = keyOf(reduced.values, mask);
        const found = byValues.get(key);
        if (!found) continue;
        matchedWant.add(reduced);
        // Each live entry once, however many desired entries are alike.
        for (const index of found) matchedHave.add(index);
        byValues.set(key, []);
      }
    }
  }
  return { missing: want.length - matchedWant.size, extra: have.length - matchedHave.size };
}

/** The values whose scalar is present in `mask` ("1" present, "0" left out), as one unambiguous text. */
function keyOf(values: readonly string[], mask: string): string {
  let key = "";
  for (let i = 0; i < values.length; i++) {
    if (mask.charCodeAt(i) === 0x31) key += `${(values[i] as string).length}:${values[i]}`;
  }
  return key;
}

/** The shape and values of a desired entry; its credentials and secret references are left out. */
function reduce(entry: unknown, wildcards: Wildcards): Reduced {
  const steps: Step[] = [];
  const values: string[] = [];
  let shape = "";
  const stack: Array<[unknown, number, string | number]> = [[entry, -1, ""]];
  while (stack.length > 0) {
    const [node, parent, key] = stack.pop() as [unknown, number, string | number];
    if (node === undefined || wildcards.value(node)) continue;
    const index = steps.length;
    const at = `${parent}${typeof key === "number" ? `#${key}` : `.${key.length}:${key}`}`;
    if (Array.isArray(node)) {
      steps.push({ parent, key, kind: "list", n: node.length });
      shape += `${at}[${node.length};`;
      for (let i = node.length - 1; i >= 0; i--) stack.push([node[i], index, i]);
    } else if (typeof node === "object" && node !== null) {
      steps.push({ parent, key, kind: "object", n: 0 });
      shape += `${at}{;`;
      const members = Object.keys(node).filter((name) => !wildcards.field(name));
      for (let i = members.length - 1; i >= 0; i--) {
        const name = members[i] as string;
        stack.push([(node as Record<string, unknown>)[name], index, name]);
      }
    } else {
      steps.push({ parent, key, kind: "scalar", n: values.length });
      shape += `${at}=;`;
      values.push(scalarOf(node));
    }
  }
  return { shape, steps, values };
}

/**
 * Which scalars of the shape the live entry has (a mask) and their values (keyOf's text); undefined
 * when it cannot match any desired entry of this shape (an object where a list is stated, a list of
 * another length, ...). A step under a node the live entry leaves out is left out too: walk does not
 * compare it.
 */
function observe(entry: unknown, steps: readonly Step[]): { mask: string; key: string } | undefined {
  const nodes: unknown[] = new Array(steps.length);
  let mask = "";
  let key = "";
  for (let index = 0; index < steps.length; index++) {
    const step = steps[index] as Step;
    const node = step.parent < 0 ? entry : childOf(nodes[step.parent], step.key);
    nodes[index] = node;
    if (step.kind === "scalar") {
      if (node === undefined) {
        mask += "0";
        continue;
      }
      const value = typeof node === "object" && node !== null ? NOT_SCALAR : scalarOf(node);
      mask += "1";
      key += `${value.length}:${value}`;
    } else if (node === undefined) {
    } else if (step.kind === "object" ? !isObject(node) : !Array.isArray(node) || node.length !== step.n) {
      return undefined;
    }
  }
  return { mask, key };
}

/** A scalar as text that tells every type apart: "1" the string from 1 the number. */
const scalarOf = (value: unknown) => (value === null ? "null" : `${typeof value}:${String(value)}`);

function childOf(parent: unknown, key: string | number): unknown {
  if (parent === undefined) return undefined;
  if (typeof key === "number") return (parent as unknown[])[key];
  return (parent as Record<string, unknown>)[key];
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
