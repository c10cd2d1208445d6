"""The bad-input corpus: every fault is refused with its location, and the last
good database survives byte for byte.

Each folder of tests/bad_inputs/ is one case: its `data/` files are laid over
the valid `_base/data/` (a file with the same path replaces the base one) and
`expected.txt` lists the start of every problem line the build must print,
`path:line: field:` and usually the beginning of the message. The build must
print exactly those problems, no more.
"""

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from computekb.cli import cli
from etl.build import build_database
from etl.crosscheck import CSV_PATH
from etl.read import MAX_FILE_BYTES

CORPUS = Path(__file__).parent / "bad_inputs"
BASE = CORPUS / "_base" / "data"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "expected.txt").exists())

# Every fault the issue lists, so deleting a case folder fails a test.
REQUIRED = {
    "malformed-yaml", "tabs", "duplicate-keys", "duplicate-slug-across-files", "wrong-types",
    "negative-quantity", "zero-quantity", "unknown-unit", "wrong-dimension", "unknown-enum",
    "forbidden-slug", "dangling-article-accelerator", "dangling-citation-source",
    "dangling-offer-accelerator", "number-without-citation", "non-utf8", "empty-file",
    "very-large-file", "alias-bomb", "python-object-tag", "several-faults",
    # The rules that keep values comparable and their sources citable.
    "throughput-two-values", "sparse-below-dense", "chip-above-system", "announced-after-available",
    "retrieved-in-the-future", "citation-vocabularies", "dangling-source-in-broken-record", "cites-aggregator",
    "forbidden-host", "fp4-vocabulary", "host-interface-not-host", "v2-vocabularies",
    "model-missing-sizing-field", "unknown-source-tier",
    "control-character", "line-separator-in-string", "newline-in-file-name", "repeated-problems",
    "integer-out-of-range", "integer-too-long", "yaml-1-1-values", "non-ascii-date", "symbolic-links",
    # Spellings of a forbidden host that name the same host, a mirror on one, a source nothing cites.
    "forbidden-host-trailing-dot", "forbidden-host-percent-encoded", "forbidden-host-userinfo",
    "forbidden-host-ideographic-full-stop", "forbidden-host-path", "forbidden-mirror", "uncited-source",
    # Reliability: units by the grammar of their field.
    "unit-grammar", "explicit-tags", "numbers-out-of-range", "explicit-slug-same-key", "file-names",
    # Every offer and price says how its date was established.
    "offer-without-date-basis", "price-date-basis",
    # Comparable rows: the kinds of memory and power agree with the values they describe.
    "memory-and-power-kinds",
    # Evidence rules v3: vendor quotes with their document and witness, FP16 accumulate apart, price dates.
    "vendor-quoted-rules", "fp16-accumulate", "value-from-page-not-read",
    # Files the build would not read are refused, not skipped; an escape is no way around a refused character;
    # a URL's host is the one a browser goes to.
    "files-not-read", "escaped-control-character", "forbidden-host-backslash",
    # Values no row can have: heads, nodes, memory, prices, counts, dates after the build, a derivation unsaid.
    "impossible-values",
}


def write_large_file(data):
    """A valid-looking file just over the size limit: too big to commit."""
    record = "  - {slug: filler, name: Filler, device_class: npu, status: announced, vendor: acme}\n"
    count = MAX_FILE_BYTES // len(record) + 1
    (data / "specs/accelerators/acme-x2.yml").write_text("accelerators:\n" + record * count)


def write_deep_nesting(data):
    """50,000 nested `[`: libyaml's C composer recursed until it segfaulted."""
    (data / "specs/accelerators/acme-x2.yml").write_text("accelerators: " + "[" * 50_000)


def write_control_characters(data):
    """A BEL and a NUL: git would store such a file as binary."""
    lines = (BASE / "specs/accelerators/acme-x1.yml").read_text().replace("acme-x1", "acme-x2").splitlines(keepends=True)
    status = next(i for i, line in enumerate(lines) if "status: " in line)
    power = next(i for i, line in enumerate(lines) if "tdp_w: " in line)
    lines[status] = lines[status].replace("status: ", "status: ship\x07")
    lines[power] = lines[power].replace("tdp_w: ", "tdp_w: 7\x00")
    (data / "specs/accelerators/acme-x2.yml").write_text("".join(lines))


def write_long_integer(data):
    offers = data / "specs/cloud_offers/cloudco.yml"
    offers.write_text(offers.read_text().replace("gpu_count: 8", "gpu_count: " + "9" * 5000))


def write_newline_in_file_name(data):
    offers = data / "specs/cloud_offers/cloudco.yml"
    (offers.parent / "bad\nname.yml").write_text(offers.read_text().replace("acme-x1", "acme-x9").replace("-8\n", "-9\n"))


FILE_NAMES = ["acme-x2.YML", "acme-x3.Yaml", ".yml", "acme-x4.yml ", "Acme-x5.yml", "a.yml:1: slug: b.yml"]


def write_file_names(data):
    """Files meant as data whose names are not plain: each refused by its name, none skipped, none read."""
    offers = data / "specs/cloud_offers/cloudco.yml"
    for name in FILE_NAMES:
        (offers.parent / name).write_text(offers.read_text().replace("acme-x1", "acme-x9"))


def write_symbolic_links(data):
    """A folder moved out of the data folder and linked back, and a link to a file inside it."""
    (data / "articles").rename(data.parent / "articles")
    (data / "articles").symlink_to(data.parent / "articles")
    (data / "specs/linked.yml").symlink_to(data / "specs/vendors.yml")


def write_repeated_problems(data):
    """`1,` 20,000 times: items that are not records, each the same problem."""
    (data / "specs/accelerators/acme-x2.yml").write_text("accelerators: [" + "1," * (REPEATED - 1) + "1]\n")


REPEATED = 20_000


GENERATED = {"very-large-file": write_large_file, "deep-nesting": write_deep_nesting,
             "control-character": write_control_characters, "integer-too-long": write_long_integer,
             "newline-in-file-name": write_newline_in_file_name, "symbolic-links": write_symbolic_links,
             "file-names": write_file_names,
             "repeated-problems": write_repeated_problems}


def expected_lines(case):
    lines = (CORPUS / case / "expected.txt").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def problem_lines(output):
    """`path:line: field: message` lines, without the summary lines (a path of other than plain characters is quoted)."""
    return [line for line in output.splitlines() if line.startswith(("data/", "'data/", '"data/'))]


def snapshot(folder):
    """The database (the release is that one file), byte for byte, and the name of every
    file outside data/ (a leftover temporary file shows up; the build cache
    may change, it is not the database)."""
    names = sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                   if p.is_file() and "data" not in p.relative_to(folder).parts)
    return names, (folder / "kb.db").read_bytes()


@pytest.fixture(scope="module")
def base_build(tmp_path_factory):
    """The last good database, built once from the base data."""
    folder = tmp_path_factory.mktemp("base")
    build_database(BASE, folder / "kb.db")
    return folder


@pytest.fixture
def workdir(tmp_path, base_build, monkeypatch):
    """A folder with data/ and a good kb.db; the current folder, so problems read `data/...`."""
    shutil.copytree(base_build, tmp_path, dirs_exist_ok=True)
    shutil.copytree(BASE, tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_corpus_has_every_fault():
    assert REQUIRED <= set(CASES)
    assert set(GENERATED) <= set(CASES)


def test_base_data_builds(workdir):
    result = CliRunner().invoke(cli, ["build", "--data", "data", "--output", "fresh.db"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_refused_at_its_location(case, workdir):
    data = workdir / "data"
    if (CORPUS / case / "data").exists():
        shutil.copytree(CORPUS / case / "data", data, dirs_exist_ok=True)
    if case in GENERATED:
        GENERATED[case](data)
    before = snapshot(workdir)

    result = CliRunner().invoke(cli, ["build", "--data", "data", "--output", "kb.db"])

    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    reported = problem_lines(result.stderr)
    unmatched = list(reported)
    for prefix in expected_lines(case):
        match = next((line for line in unmatched if line.startswith(prefix)), None)
        assert match, f"no problem starts with {prefix!r}; got:\n" + "\n".join(reported)
        unmatched.remove(match)
    assert not unmatched, "unexpected problems:\n" + "\n".join(unmatched)
    assert snapshot(workdir) == before


def test_repeated_problems_are_counted_after_twenty(workdir):
    write_repeated_problems(workdir / "data")

    result = CliRunner().invoke(cli, ["validate", "--data", "data"])

    lines = result.stderr.splitlines()
    assert len(lines) == 20 + 2, lines[:3]  # 20 problems, the count of the others, the total
    assert lines[20] == f"  ... and {REPEATED - 20:,} more of data/specs/accelerators/acme-x2.yml: accelerators: " \
                        "expected a record (a mapping), got int"


def test_the_files_kept_for_other_commands_are_listed_and_not_read(workdir):
    epoch = workdir / "data" / CSV_PATH
    epoch.parent.mkdir(parents=True, exist_ok=True)
    epoch.write_text("Hardware name,Release date\nnot a record,\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["build", "--data", "data", "--output", "fresh.db"])
    assert result.exit_code == 0, result.output
    assert "Not read by the build: data/crosscheck/epoch-ai/ml_hardware.csv (Epoch AI's dataset, read by " \
           "`computekb report --crosscheck`)\n" in result.output
