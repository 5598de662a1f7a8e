/**
 * `make`, with its answer kept for each key object: for what is worked out from objects nothing
 * changes in place (manifests, specs), which a daemon's passes see again while their files are
 * unchanged (see ParseCache), and look up several times per pass. Keys are held weakly.
 */
export function oncePer<K extends object, V>(make: (key: K) => V): (key: K) => V {
  const made = new WeakMap<K, V>();
  return (key) => {
    if (made.has(key)) return made.get(key) as V;
    const value = make(key);
    made.set(key, value);
    return value;
  };
}
