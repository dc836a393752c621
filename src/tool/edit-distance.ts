// One edit distance for every "did you mean" and near-match in the code base.

/**
 * The Levenshtein distance of `a` and `b` when it is at most `cap`, else `cap + 1`. A banded
 * table: cells farther than `cap` from the diagonal cannot end within it, so the cost is
 * O(length × cap) and a hopeless pair stops at the first row past the cap.
 */
export function editDistance(a: string, b: string, cap = Math.max(a.length, b.length)): number {
  if (Math.abs(a.length - b.length) > cap) return cap + 1;
  const over = cap + 1;
  let prev = new Array<number>(b.length + 1);
  let cur = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) prev[j] = j <= cap ? j : over;
  for (let i = 1; i <= a.length; i++) {
    const lo = Math.max(1, i - cap);
    const hi = Math.min(b.length, i + cap);
    cur.fill(over);
    cur[0] = i <= cap ? i : over;
    let rowMin = cur[0] as number;
    for (let j = lo; j <= hi; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      const v = Math.min((prev[j - 1] as number) + cost, (prev[j] as number) + 1, (cur[j - 1] as number) + 1, over);
      cur[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > cap) return over;
    [prev, cur] = [cur, prev];
  }
  return Math.min(prev[b.length] as number, over);
}
