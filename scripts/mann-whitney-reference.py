"""Reference p-values of the two-sided Mann-Whitney U test, from SciPy, for
common/src/mann-whitney.test.ts. Regenerate (needs scipy, not a project dependency):
  python3 scripts/mann-whitney-reference.py > test/fixtures/stats/mann-whitney-reference.json
"""
import json
import scipy
from scipy.stats import mannwhitneyu

CASES = [
    # runs' performance scores and LCPs as perfwatch stores them: 3 to 11 runs a side
    ("3 vs 3, apart", [82, 83, 84], [90, 91, 93]),
    ("3 vs 3, overlapping", [82, 85, 84], [83, 86, 81]),
    ("5 vs 5, LCP ms, apart", [1695.2, 1701.8, 1688.0, 1750.4, 1712.9], [1402.3, 1388.1, 1420.7, 1399.9, 1410.2]),
    ("5 vs 3, no ties", [1.5, 2.5, 3.5, 4.5, 5.5], [2.0, 6.0, 7.0]),
    ("3 vs 3, ties (scores)", [83, 83, 84], [84, 85, 85]),
    ("5 vs 5, ties", [72, 72, 72, 73, 71], [72, 70, 70, 71, 72]),
    ("9 vs 9, no ties", [1.1, 2.3, 3.2, 4.8, 5.0, 6.7, 7.1, 8.4, 9.9], [3.3, 4.4, 5.5, 6.6, 7.7, 8.8, 9.2, 10.1, 11.5]),
    ("9 vs 11, ties", [80, 81, 81, 82, 83, 83, 84, 85, 85], [83, 84, 84, 85, 86, 86, 87, 88, 88, 89, 90]),
    ("11 vs 11, identical", list(range(11)), list(range(11))),
    ("3 vs 9, no ties", [10.5, 20.5, 30.5], [1, 2, 3, 4, 5, 6, 7, 8, 9]),
]

out = {"scipy": scipy.__version__, "test": "scipy.stats.mannwhitneyu(x, y, alternative='two-sided', method='auto', use_continuity=True)", "cases": []}
for name, x, y in CASES:
    r = mannwhitneyu(x, y, alternative="two-sided", method="auto", use_continuity=True)
    out["cases"].append({"name": name, "x": x, "y": y, "u": float(r.statistic), "p": float(r.pvalue)})
print(json.dumps(out, indent=2))
