"""Deliberate bugs, applied one at a time: which does the test suite let through?

    python bench/mutations.py               # every bug, the suite without browser tests
    python bench/mutations.py --only atomic-rename --browser
    python bench/mutations.py --only cite-note-unescaped --tests tests/test_expected_values.py

Each bug is a small text change to one file of the checkout. The file must have
no uncommitted change; it is restored after the run whatever happens. The suite
runs with `-x` (a caught bug stops at its first failing test) and the report
gives, per bug, the first test that failed or SURVIVES. A bug whose text is no
longer in its file (the code changed since) is reported as such, not run. Run it
on a checkout whose suite passes: a test already failing would "catch" every bug.
"""

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]


class Bug(NamedTuple):
    name: str
    path: str      # file of the checkout
    before: str    # text found once in it
    after: str     # what replaces it
    what: str


BUGS = [
    Bug("citation-kind-check", "etl/validate.py",
        "if kind is not None and kind not in CITATION_KINDS:", "if False:",
        "a citation's kind is no longer checked against the schema's kinds"),
    Bug("atomic-rename", "etl/build.py",
        "os.replace(new_db, output)", "__import__('shutil').copyfile(new_db, output)",
        "the new database is copied into the old file instead of renamed over it"),
    Bug("facet-never-truncated", "plugins/speed.py",
        "await self.count_query(column, size + 1)", "await self.count_query(column, size)",
        "the tag-facet query asks for as many tags as it shows, so it is never marked truncated"),
    Bug("what-fits-ignores-batch", "serving/what_fits.py",
        "'batch', p.batch, 'kv_bits', coalesce(k.effective_bits, k.bits),",
        "'batch', 1, 'kv_bits', coalesce(k.effective_bits, k.bits),",
        "what-fits sizes the KV cache for one sequence whatever the batch"),
    Bug("vendor-pages-are-vendor-specs", "etl/transform.py",
        '"vendor-primary": "vendor-spec", "vendor-secondary": "vendor-spec",',
        '"vendor-primary": "third-party", "vendor-secondary": "third-party",',
        "a page of a hardware vendor (its source's tier) no longer makes its citations vendor specs"),
    Bug("derived-label-flag", "etl/transform.py",
        'article["label_derived"] = article["title"] is None', 'article["label_derived"] = False',
        "a label cut from the summary is no longer flagged as derived"),
    Bug("cite-note-unescaped", "plugins/cite.py",
        "note = f\"<br><small>{escape(c['note'])}</small>\"", "note = f\"<br><small>{c['note']}</small>\"",
        "a citation's note is put into the spec sheet's HTML unescaped"),
    Bug("compare-highest-price-best", "plugins/compare.py",
        'LOWER_IS_BETTER = {"tdp_w", "launch_price_usd", "cheapest_gpu_hour_usd"}',
        'LOWER_IS_BETTER = {"tdp_w", "cheapest_gpu_hour_usd"}',
        "compare marks the highest launch price best"),
    Bug("price-per-gpu-not-divided", "etl/transform.py",
        'per_device(offer["price_per_hour"], offer["gpu_count"])', 'per_device(offer["price_per_hour"], 1)',
        "price per GPU-hour is the instance's price, not divided by its GPU count"),
    Bug("bibtex-percent-unescaped", "serving/citation_text.py",
        '"%": r"\\%", ', '"%": "%", ',
        "`%` is not escaped in BibTeX (it starts a comment there)"),
    Bug("not-supported-overrides-support", "etl/transform.py",
        'yield slug, "yes" if True in said[slug] else "no" if said[slug] else "unknown"',
        'yield slug, "no" if False in said[slug] else "yes" if said[slug] else "unknown"',
        "one cited `supported: false` overrides cited support of another format of the family"),
    Bug("throughput-anchor-swapped", "plugins/cite.py",
        'anchor = value_anchor(c["precision"], c["engine"], c["sparsity"])',
        'anchor = value_anchor(c["precision"], c["sparsity"], c["engine"])',
        "a throughput citation links to its spec-sheet anchor built with engine and sparsity swapped"),
    Bug("fp4-formats-keep-unsupported", "etl/transform.py",
        'if family.get(claim.format) != "fp4" or not claim.supported:', 'if family.get(claim.format) != "fp4":',
        "an FP4 format cited as not supported is listed among the supported ones"),
    Bug("bibtex-braces-unescaped", "serving/citation_text.py",
        '"{": r"\\{", "}": r"\\}", ', '',
        "braces of a title are not escaped in BibTeX (they unbalance the entry)"),
    Bug("release-diff-skips-added-rows", "etl/release_diff.py",
        "fields = list(after) + [f for f in before if f not in after]", "fields = list(before)",
        "the release diff lists nothing of a row added since the previous release"),
    Bug("changes-rewritten-on-same-release", "etl/build.py",
        "if diff.old_release == diff.new_release:", "if False:",
        "rebuilding the same release replaces its list of changes with an empty one"),
]


def uncommitted(path: str) -> bool:
    status = subprocess.run(["git", "status", "--porcelain", "--", path], cwd=ROOT, capture_output=True, text=True)
    return bool(status.stdout.strip())


def first_failure(output: str) -> str:
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" - ")[0]
    return output.strip().splitlines()[-1] if output.strip() else "no output"


def run_suite(browser: bool, tests: list[str]) -> tuple[bool, str]:
    """(passed, first failure or summary) of the suite (or of `tests`) on the checkout as it is."""
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-rfE", "-p", "no:cacheprovider", *tests]
    if not browser:
        command += ["-m", "not browser"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    return result.returncode == 0, first_failure(result.stdout + result.stderr)


def try_bug(bug: Bug, browser: bool, tests: list[str]) -> str:
    """What the suite says of `bug`: the test that caught it, SURVIVES, or why it was not run."""
    path = ROOT / bug.path
    original = path.read_text(encoding="utf-8")
    if original.count(bug.before) != 1:
        return f"not applied: its text is not found once in {bug.path}"
    if uncommitted(bug.path):
        return f"not applied: {bug.path} has uncommitted changes"
    try:
        path.write_text(original.replace(bug.before, bug.after), encoding="utf-8")
        passed, detail = run_suite(browser, tests)
    finally:
        path.write_text(original, encoding="utf-8")
    return "SURVIVES (the suite passed)" if passed else f"caught: {detail}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", choices=[b.name for b in BUGS], help="Only this bug (repeatable).")
    parser.add_argument("--browser", action="store_true", help="Run the browser tests too.")
    parser.add_argument("--tests", nargs="*", default=[],
                        help="Only these test files (a quick check that they catch a bug; the count is of the suite).")
    args = parser.parse_args()
    bugs = [b for b in BUGS if not args.only or b.name in args.only]
    survivors = 0
    for bug in bugs:
        started = time.perf_counter()
        verdict = try_bug(bug, args.browser, args.tests)
        survivors += verdict.startswith("SURVIVES")
        print(f"{bug.name} ({bug.what}): {verdict} [{time.perf_counter() - started:.0f} s]", flush=True)
    print(f"{survivors} of {len(bugs)} bugs survive")


if __name__ == "__main__":
    main()
