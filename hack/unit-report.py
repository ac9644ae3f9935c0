"""Reads `go test -json` on stdin for hack/unit.sh: prints one line per
package as it finishes and the failing tests' output, then a count of tests
run, passed, failed and skipped. Exits non-zero if anything failed or if a
package not listed in the exclude file (argv[1]) skipped every test it has:
a package whose tests all need root belongs in that list, with its reason.

  unit-report.py EXCLUDE_FILE MODULE [SKIPPED_OUT]

SKIPPED_OUT, if given, receives "PACKAGE TEST" for each top-level test that
skipped itself or a subtest, for hack/test.sh to run again as root."""
import json
import sys

tests = {}  # (package, top-level test) -> pass | fail | skip
output = {}  # (package, test) -> lines, kept until the test passes
failed_pkgs = []
skipped = set()  # (package, top-level test) that skipped itself or a subtest
for line in sys.stdin:
    try:
        ev = json.loads(line)
    except ValueError:
        print(line, end="")  # build errors come as plain text
        continue
    pkg, test, action = ev.get("Package", ""), ev.get("Test", ""), ev.get("Action")
    if action == "output":
        output.setdefault((pkg, test), []).append(ev.get("Output", ""))
    elif action in ("pass", "fail", "skip"):
        if test and "/" not in test:
            tests[(pkg, test)] = action
        if test and action == "skip":
            skipped.add((pkg, test.split("/")[0]))
        if action == "fail":
            sys.stdout.write("".join(output.get((pkg, test), [])))
        output.pop((pkg, test), None)
        if not test:
            counts = [s for (p, _), s in tests.items() if p == pkg]
            print("%-4s %s (%d tests, %d skipped, %.1fs)" % (
                {"pass": "ok", "fail": "FAIL", "skip": "--"}[action], pkg,
                len(counts), counts.count("skip"), ev.get("Elapsed", 0)))
            if action == "fail":
                failed_pkgs.append(pkg)

with open(sys.argv[1]) as f:
    excluded = {l.split()[0] for l in f if l.strip() and not l.startswith("#")}
module = sys.argv[2]
by_pkg = {}
for (pkg, _), status in tests.items():
    by_pkg.setdefault(pkg, []).append(status)
all_skipped = sorted(p for p, s in by_pkg.items()
                     if all(x == "skip" for x in s) and p.removeprefix(module + "/") not in excluded)

statuses = list(tests.values())
ran = len(statuses) - statuses.count("skip")
print("unit: %d tests ran (%d passed, %d failed), %d skipped, in %d packages" % (
    ran, statuses.count("pass"), statuses.count("fail"), statuses.count("skip"), len(by_pkg)))
for pkg in all_skipped:
    print("unit: every test of %s skipped; make one run without root, or list it in %s with why"
          % (pkg, sys.argv[1]))
if len(sys.argv) > 3:
    with open(sys.argv[3], "w") as f:
        f.writelines("%s %s\n" % t for t in sorted(skipped))
sys.exit(1 if failed_pkgs or statuses.count("fail") or all_skipped else 0)
