"""Consistency rules across rows and files: what makes the values comparable and their sources citable.

Each file yields `Fact`s (a value a rule needs, with where it was written);
`check` applies every rule once all files are in and returns located problems.
The rules: sparse figures never below dense ones; a chip's value never above
its system's, and `system` naming a system row; a host interface that is a host
link; a value never citing an aggregator, a source (or the mirror it was read
through) never on a forbidden host, every source cited by something, a
`retrieved` date never in the future; FP4 claims in the FP4 vocabulary, one
vocabulary per family, and no figure in a precision its row says is
unsupported. Facts are small tuples: a file's facts are cached with it, and
only the facts, not the rows, stay in memory until the end.
"""

import datetime
import posixpath
import re
from collections import defaultdict
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

from domain.schema import COMPARABLE_ACCUMULATE, UNCITABLE_TIERS

from .problems import Problem

# Words of a source saying only "FP4", and the formats that name the FP4 encoding.
FP4_NOT_STATED = "fp4"
FP4_VOCABULARY = ("nvfp4", "mxfp4", FP4_NOT_STATED)
# Accelerator values a chip or GPU cannot exceed in the system it belongs to (a
# price is not a physical bound).
BOUNDED_BY_SYSTEM = ("memory_gb", "addressable_memory_gb", "memory_bandwidth_gbs", "tdp_w", "interconnect_gbs")
# The source kind of seller pages (docs/DATA.md, "Source tiers").
SELLER_KIND = "listing"


class Fact(NamedTuple):
    """One value a rule across rows needs, and where it was written."""

    kind: str
    key: tuple
    value: object
    path: str
    line: int
    field: str


# What a resolver reads as the dot between labels: the full stop, and the ideographic, fullwidth and
# halfwidth ideographic full stops (U+3002, U+FF0E, U+FF61) that IDNA maps to it.
FULL_STOPS = re.compile("[.\u3002\uff0e\uff61]")


def canonical_host(host):
    """`host` as a resolver reads it: percent-decoded, without user information, every Unicode full stop
    a dot, lower-case, without the trailing dot of a fully qualified name, in IDNA (ASCII) form; so no
    spelling of a forbidden host ("Farm.example.net.", "farm%2Eexample.net", "farm。example.net")
    escapes the list."""
    host = unquote(host).rpartition("@")[2].lower()
    labels = FULL_STOPS.split(host)
    while labels and not labels[-1]:  # the trailing dot(s) of a fully qualified name
        labels.pop()
    try:
        return ".".join(label.encode("idna").decode("ascii") if label else label for label in labels)
    except UnicodeError:  # a label IDNA refuses (too long): compared as written
        return ".".join(labels)


# Schemes the WHATWG URL standard calls special: a backslash is a slash in them, and any run of slashes
# and backslashes after the colon leads to the host.
SPECIAL_SCHEMES = ("http", "https", "ftp", "ws", "wss")
C0_AND_SPACE = "".join(map(chr, range(0x21)))
SPECIAL_URL = re.compile(r"^([a-z][a-z0-9+.-]*):[/\\]*(.*)\Z", re.IGNORECASE | re.DOTALL)


def as_browsers_read(url):
    """`url` as a browser parses it (WHATWG): control characters and spaces trimmed, tabs and line ends
    removed, and in a special scheme each backslash a slash. Python's parser does none of it:
    `https://codingmall.com\\@www.amd.com/x` names www.amd.com to Python and leads browsers to codingmall.com."""
    url = re.sub("[\t\n\r]", "", url.strip(C0_AND_SPACE))
    match = SPECIAL_URL.match(url)
    if not match or match.group(1).lower() not in SPECIAL_SCHEMES:
        return url
    return f"{match.group(1)}://" + match.group(2).replace("\\", "/")


def host_of(url):
    """The canonical host of `url` as a browser reads it (user information and port removed); "" without one."""
    if not url:
        return ""
    url = as_browsers_read(url)
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:  # a netloc urlsplit refuses (NFKC forms of "@", ":"...): up to the path
        host = url.split("://", 1)[-1].split("/", 1)[0]
    return canonical_host(host)


def address_of(url):
    """(canonical host, canonical path) of `url`: the path percent-decoded, lower-case and normalized
    ("/A//b/./c" is "/a/b/c"), so an account on a shared host is named one way."""
    host = host_of(url)
    url = url and as_browsers_read(url)
    try:
        path = urlsplit(url).path if url else ""
    except ValueError:
        path = "/" + url.split("://", 1)[-1].partition("/")[2]
    return host, posixpath.normpath("/" + unquote(path).lower().lstrip("/"))


def row_facts(row):
    """The facts of one validated row (a `validate.Row`)."""
    v, at = row.values, row.line_of
    if row.table == "sources":
        facts = [Fact("source", (v["slug"],), (v["tier"], address_of(v.get("url"))), row.path, at("url"), "url"),
                 Fact("retrieved", (v["slug"],), v["retrieved"], row.path, at("retrieved"), "retrieved")]
        facts.append(Fact("listed_source", (v["slug"],), v.get("article") is not None, row.path, at("slug"), "slug"))
        facts.append(Fact("source_kind", (v["slug"],), v["kind"], row.path, at("kind"), "kind"))
        if v.get("witness"):
            facts.append(Fact("witness", (v["slug"],), v["witness"], row.path, at("witness"), "witness"))
        if v.get("read_via"):
            facts.append(Fact("mirror", (v["slug"],), address_of(v["read_via"]), row.path, at("read_via"), "read_via"))
        return facts
    if row.table == "forbidden_sources":
        path = posixpath.normpath("/" + v["path"].lower().strip("/")) if v.get("path") else ""
        return [Fact("forbidden", (canonical_host(v["host"]), path), v["reason"], row.path, at("host"), "host")]
    if row.table == "number_formats":
        return [Fact("format_family", (v["slug"],), v.get("family"), row.path, at("family"), "family")]
    if row.table == "interconnects":
        return [Fact("link_kind", (v["slug"],), v["kind"], row.path, at("kind"), "kind")]
    if row.table == "throughput":
        if v["accumulate"] != COMPARABLE_ACCUMULATE:
            return []  # a variant of its own, compared with nothing
        key = (v["accelerator"], v["precision"], v["sparsity"], v["engine"])
        return [Fact("throughput", key, v["tflops"], row.path, at("tflops"), "tflops")]
    if row.table == "format_support":
        supported = v.get("supported") is not False
        return [Fact("format_claim", (v["accelerator"], v["format"]), supported, row.path, at("format"), "format")]
    if row.table == "accelerators":
        facts = [Fact("accelerator", (v["slug"],), (v["scope"], v.get("family")), row.path, at("scope"), "scope")]
        facts += [Fact("measure", (v["slug"], name), v[name], row.path, at(name), name)
                  for name in BOUNDED_BY_SYSTEM if v.get(name) is not None]
        if v.get("system"):
            facts.append(Fact("system", (v["slug"],), v["system"], row.path, at("system"), "system"))
        if v.get("host_interface"):
            facts.append(Fact("host_interface", (v["slug"],), v["host_interface"], row.path, at("host_interface"),
                              "host_interface"))
        return facts
    if row.table == "articles":
        facts = [Fact("article_url", (v["url"],), v["slug"], row.path, at("url"), "url")] if v.get("url") else []
        if v.get("translation_key"):
            tags = tuple(sorted(set(v.get("accelerators") or ())))
            facts.append(Fact("translation_tags", (v["translation_key"], v["slug"]), tags, row.path,
                              at("accelerators"), "accelerators"))
        return facts
    if row.table in ("prices", "cloud_offers"):
        return [Fact("observed", (row.table, v["slug"]), v["observed"], row.path, at("observed"), "observed")]
    if row.table == "accelerator_aliases":
        return [Fact("alias", (v["dataset"], v["name"]), v["slug"], row.path, at("name"), "name")]
    return []


def file_facts(rows, citations):
    """Every fact of one file: its rows', and the source each of its citations names."""
    facts = [fact for row in rows for fact in row_facts(row)]
    facts += [Fact("cites", (source,), None, c.path, c.line, c.field) for c in citations for source in (c.source, *c.basis)]
    return facts


def seller_witness(facts):
    """A seller listing may back a vendor quote beside another witness, never as the only one."""
    kinds = by_key(facts["source_kind"])
    for fact in facts["witness"]:
        kind = kinds.get((fact.value,))
        if kind is not None and kind.value == SELLER_KIND:
            yield problem(fact, f"{fact.value!r} is a seller listing ({where(kind)}): a vendor quote needs a witness "
                                "other than a seller page")


def problem(fact, message):
    return Problem(fact.path, fact.line, fact.field, message)


def where(fact):
    return f"{fact.path}:{fact.line}"


def by_key(facts):
    return {fact.key: fact for fact in facts}


def sparse_above_dense(facts):
    """A 2:4-sparse figure is never below the dense figure of the same precision and engine."""
    figures = by_key(facts["throughput"])
    for (accelerator, precision, sparsity, engine), sparse in figures.items():
        dense = figures.get((accelerator, precision, "dense", engine))
        if sparsity != "dense" and dense is not None and sparse.value < dense.value:
            yield problem(sparse, f"the {sparsity} figure ({sparse.value:g}) is below the dense one "
                                  f"({dense.value:g}, {where(dense)}): a sparse figure is never lower")


def within_system(facts):
    """`system` names a system row, and a chip's values never exceed the system's."""
    accelerators = by_key(facts["accelerator"])
    measures = by_key(facts["measure"])
    figures = by_key(facts["throughput"])
    by_accelerator = defaultdict(list)
    for fact in facts["throughput"]:
        by_accelerator[fact.key[0]].append(fact)
    for link in facts["system"]:
        chip, system = link.key[0], link.value
        if system == chip:
            yield problem(link, "an accelerator cannot be its own system")
            continue
        if (system,) not in accelerators:
            continue  # the reference check reports it
        scope = accelerators[(system,)].value[0]
        if scope != "system":
            yield problem(link, f"{system!r} has scope {scope!r}: `system` names a row of scope system")
            continue
        for name in BOUNDED_BY_SYSTEM:
            mine, theirs = measures.get((chip, name)), measures.get((system, name))
            if mine and theirs and mine.value > theirs.value:
                yield problem(mine, f"{mine.value:g} is above the {theirs.value:g} of its system {system!r} "
                                    f"({where(theirs)}): a chip's value never exceeds its system's")
        for mine in by_accelerator[chip]:
            theirs = figures.get((system, *mine.key[1:]))
            if theirs and mine.value > theirs.value:
                yield problem(mine, f"{mine.value:g} is above the {theirs.value:g} of its system {system!r} "
                                    f"({where(theirs)}): a chip's value never exceeds its system's")


def host_links(facts):
    """A host interface is an interconnect of kind host."""
    kinds = by_key(facts["link_kind"])
    for fact in facts["host_interface"]:
        link = kinds.get((fact.value,))
        if link is not None and link.value != "host":
            yield problem(fact, f"{fact.value!r} is a {link.value} link: host_interface names an interconnect of kind host")


def citable_sources(facts):
    """No value cites an aggregator; no source is on a forbidden host."""
    sources = by_key(facts["source"])
    for fact in facts["cites"]:
        source = sources.get(fact.key)
        if source is not None and source.value[0] in UNCITABLE_TIERS:
            yield problem(fact, f"cites {fact.key[0]!r}, a source of tier {source.value[0]}: no value may cite an "
                                "aggregator (name it in a note, and cite the page it reproduces)")
    forbidden = by_key(facts["forbidden"])
    addresses = [(source, source.value[1]) for source in sources.values()] + [(m, m.value) for m in facts["mirror"]]
    for fact, (host, path) in addresses:
        ban = forbidden_entry(host, path, forbidden)
        if ban is not None:
            named = host + ban.key[1]
            yield problem(fact, f"{named} is on the list of forbidden sources ({where(ban)}): {ban.value}")


def forbidden_entry(host, path, forbidden):
    """The forbidden_sources fact that refuses the canonical `host` and `path`, or None: an entry without
    a path refuses its host and the domains under it, one with a path that path on that host (an account
    of a shared host such as github.com)."""
    parts = host.split(".")
    whole = next((forbidden[(suffix, "")] for suffix in (".".join(parts[i:]) for i in range(len(parts)))
                  if (suffix, "") in forbidden), None)
    return whole or next((ban for (banned, prefix), ban in forbidden.items()
                          if prefix and banned == host and (path == prefix or path.startswith(prefix + "/"))), None)


def unread_file(path):
    """The fact that (part of) a file could not be read: what it cites is not known."""
    return Fact("unread_file", (path,), None, path, 1, "-")


def every_source_cited(facts):
    """A source is cited by something: a value, a price, an offer, a claim, or it is a catalogued article.
    An uncited source is removed from the data (git keeps its history). Not judged while a file could
    not be read: its citations are unknown, and its own problem says so."""
    if facts["unread_file"]:
        return
    named = {fact.key for fact in facts["names_source"]} | {fact.key for fact in facts["cites"]}
    for source in facts["listed_source"]:
        if source.key not in named and not source.value:
            yield problem(source, f"source {source.key[0]!r} is cited by no value, price, offer or claim and is no "
                                  "catalogued article: cite it or remove it (git keeps its history)")


def earliest_day(date):
    """The first day a partial date (YYYY, YYYY-MM, YYYY-MM-DD) can mean."""
    parts = [int(p) for p in date.split("-")] + [1, 1]
    return datetime.date(*parts[:3])


def read_in_the_past(facts, today):
    """A page is read, and a price or an offer observed, on or before the day of the build."""
    for kind, what in (("retrieved", "retrieved is the date the page was read"),
                       ("observed", "observed is the date the price or offer was stated or observed")):
        for fact in facts[kind]:
            if earliest_day(fact.value) > today:
                yield problem(fact, f"{fact.value} is in the future (today is {today.isoformat()}, UTC): {what}")


def fp4_vocabulary(facts):
    """FP4 claims use nvfp4, mxfp4 or fp4 ("FP4, format not stated"), and the members of one
    family either all name the FP4 format or all leave it unstated."""
    family_of = {fact.key[0]: fact.value for fact in facts["format_family"]}
    accelerators = by_key(facts["accelerator"])
    named = defaultdict(dict)   # family -> accelerator -> (names the format?, a claim)
    for claim in facts["format_claim"]:
        accelerator, fmt = claim.key
        if family_of.get(fmt) != "fp4" or not claim.value:
            continue
        if fmt not in FP4_VOCABULARY:
            yield problem(claim, f"{fmt!r} is not an FP4 claim of the vocabulary: write nvfp4, mxfp4, or fp4 "
                                 "when the source says FP4 without naming the format")
            continue
        row = accelerators.get((accelerator,))
        family = row.value[1] if row else None
        if family:
            names, _ = named[family].get(accelerator, (False, claim))
            named[family][accelerator] = (names or fmt != FP4_NOT_STATED, claim)
    for family, members in named.items():
        naming = sorted(a for a, (names, _) in members.items() if names)
        vague = sorted(a for a, (names, _) in members.items() if not names)
        if naming and vague:
            for accelerator in vague:
                yield problem(members[accelerator][1],
                              f"family {family!r} names its FP4 format elsewhere ({', '.join(naming)}) but this member "
                              "says only fp4: name the format as a source states it")


def no_figure_where_unsupported(facts):
    """A figure in a precision family its accelerator is said not to support is a contradiction."""
    family_of = {fact.key[0]: fact.value for fact in facts["format_family"]}
    refused = {(c.key[0], family_of.get(c.key[1])): c for c in facts["format_claim"] if not c.value}
    for figure in facts["throughput"]:
        accelerator, precision = figure.key[:2]
        claim = refused.get((accelerator, family_of.get(precision)))
        if claim is not None:
            yield problem(figure, f"a {precision} figure, but {where(claim)} says {claim.key[1]} is not supported")


def repeats(facts):
    """(fact, the first fact of its key) for each fact whose key an earlier fact already has."""
    first = {}
    for fact in facts:
        if fact.key in first:
            yield fact, first[fact.key]
        else:
            first[fact.key] = fact


def one_alias_per_name(facts):
    """A dataset's name maps to one accelerator: a second alias row for it is a contradiction waiting to happen."""
    for fact, earlier in repeats(facts["alias"]):
        yield problem(fact, f"{fact.key[0]} name {fact.key[1]!r} already has an alias at {where(earlier)}")


def one_article_per_url(facts):
    """Two articles at one address are one article catalogued twice."""
    for fact, earlier in repeats(facts["article_url"]):
        yield problem(fact, f"{fact.key[0]} is already the address of {earlier.value} ({where(earlier)})")


def translations_tagged_alike(facts):
    """The language versions of one article discuss the same accelerators: tags that differ mislead one
    language's readers."""
    versions = defaultdict(list)
    for fact in facts["translation_tags"]:
        versions[fact.key[0]].append(fact)
    for group in versions.values():
        first = group[0]
        for other in group[1:]:
            if other.value != first.value:
                yield problem(other, f"accelerators {list(other.value)} differ from those of its translation "
                                     f"{first.key[1]} ({where(first)}): {list(first.value)}; tag both alike")


RULES = (sparse_above_dense, within_system, host_links, citable_sources, every_source_cited, fp4_vocabulary,
         no_figure_where_unsupported, one_alias_per_name, one_article_per_url, translations_tagged_alike, seller_witness)


def check(facts, today=None):
    """Every problem the rules find in `facts` ({kind: [Fact]}), in rule order."""
    today = today or datetime.datetime.now(datetime.UTC).date()
    problems = [p for rule in RULES for p in rule(facts)]
    return problems + list(read_in_the_past(facts, today))
