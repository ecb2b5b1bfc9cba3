"""The tolerance-audit table (docs/tolerance_audit.md) from the git diff of tests/ between two commits.

Usage: ``python tools/tolerance_audit_table.py BASE HEAD > table.md``. Each removed line holding a literal
tolerance (1e-7 .. 1e-19) is paired, by position within its diff hunk, with an added line of the same hunk
that derives a tolerance (``tol``, ``EPS``, ``SWEEP_TOL``, ``solve_tol``, ``assert_close``); the pairing is a
heuristic, so read the new line where the "why" column says "see line".
"""
import re
import subprocess
import sys

base, head = sys.argv[1], sys.argv[2]
LIT = re.compile(r"\b\d+(?:\.\d+)?e-(?:1[0-9]|[7-9])\b")
NEW = re.compile(r"(tol\([^)]*\)|\d+\s*\*\s*EPS|EPS\s*\*\s*[\w.()*]+|2\s*\*\*\s*\d+\s*\*\s*EPS"
                 r"|SWEEP_TOL|solve_tol\([^)]*\)|assert_close\(|close\(|margin=[\w.*]+)")
files = subprocess.run(["git", "diff", "--name-only", base, head, "--", "tests"], capture_output=True, text=True).stdout.split()
rows = []
for f in files:
    diff = subprocess.run(["git", "diff", "-U0", base, head, "--", f], capture_output=True, text=True).stdout
    for hunk in re.split(r"\n(?=@@)", diff):
        m = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)", hunk)
        if not m:
            continue
        lines = hunk.split("\n")[1:]
        old = [l[1:].strip() for l in lines if l.startswith("-") and LIT.search(l)]
        new = [l[1:].strip() for l in lines if l.startswith("+") and NEW.search(l)] or \
              [l[1:].strip() for l in lines if l.startswith("+") and l[1:].strip()]
        if not old:
            continue
        for i, o in enumerate(old):
            n = new[i] if i < len(new) else (new[-1] if new else "(removed: check now exact or moved)")
            rows.append((f, int(m.group(1)), ", ".join(LIT.findall(o)), o, n))
def clip(s, k=110):
    s = s.replace("|", "\\|")
    return s if len(s) <= k else s[:k - 1] + "…"
def why(n):
    if "solve_tol" in n or "cond" in n:
        return "solve: margin x condition number(s)"
    if "SWEEP_TOL" in n:
        return "two implementations' sweeps (2^10 EPS)"
    for pat, r in ((r"2\s*\*\*\s*16", "deep chain / factorization (2^16 EPS)"),
                   (r"2\s*\*\*\s*13", "recursive sweep (2^13 EPS)"),
                   (r"2\s*\*\*\s*1[0-2]", "sweep / small solve (2^10-2^12 EPS)"),
                   (r"512\s*\*\s*EPS|margin=512", "a few hundred flops (512 EPS)"),
                   (r"64\s*\*\s*EPS|margin=64", "a few dozen flops (64 EPS)"),
                   (r"tol\(|assert_close|close\(|EPS", "scaled round-off (see line)")):
        if re.search(pat, n):
            return r
    return "method tolerance or exact (see line)"
print("| file:line | old literal | old line | new line | why |\n|---|---|---|---|---|")
for f, ln, lit, o, n in rows:
    print(f"| {f.removeprefix('tests/')}:{ln} | {lit} | `{clip(o)}` | `{clip(n)}` | {why(n)} |")
print(f"\n{len(rows)} tolerances in {len({r[0] for r in rows})} files.", file=sys.stderr)
