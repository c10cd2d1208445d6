"""Synthetic data shaped like `data/`, for benchmarks: N records, seeded.

    python bench/generate.py --records 10000 --out bench/out/data-10k

Every file looks like a real one: one article per file, one accelerator per
file with its throughput, format support and street prices, sources and cloud
offers grouped by publisher and provider; quantities written with their unit,
every number cited, every reference resolving. All names are visibly
synthetic ("Synthetic vendor 3"), every URL is under example.com, and the files
are written only under the folder given (never into `data/`).
"""

import argparse
import json
import random
import shutil
from pathlib import Path

from serving.measured import DEFAULT_ELECTRICITY_PRICE

ROOT = Path(__file__).resolve().parents[1]

# Share of the N records per table (catalog tables come on top, a few dozen rows).
SHARES = {"articles": 0.40, "sources": 0.15, "cloud_offers": 0.075, "accelerators": 0.025}
THROUGHPUT_PER_ACCELERATOR, FORMATS_PER_ACCELERATOR, PRICES_PER_ACCELERATOR = 6, 4, 4
PER_FILE = 50  # sources per publisher file, offers per provider file

PRECISIONS = (("fp64", 64, "float"), ("fp32", 32, "float"), ("tf32", 19, "float"), ("bf16", 16, "float"),
              ("fp16", 16, "float"), ("fp8", 8, "family"), ("fp6", 6, "family"), ("fp4", 4, "family"),
              ("int8", 8, "integer"), ("int4", 4, "integer"))
SOURCE_KINDS = ("vendor-datasheet", "vendor-page", "vendor-blog", "spec", "press", "article", "benchmark",
                "documentation", "paper", "listing")
DEVICE_CLASSES = ("datacenter-gpu", "workstation-gpu", "consumer-gpu", "unified-memory-system", "edge-module",
                  "tpu-asic", "npu")
MEMORY_GB = (16, 24, 32, 48, 64, 80, 94, 96, 128, 141, 192, 256, 288)
MEMORY_TYPES = ("HBM3", "HBM3E", "HBM4", "GDDR6", "GDDR7", "LPDDR5X")
TIERS = ("vendor-primary", "vendor-secondary", "independent-measurement", "third-party")  # aggregators are never cited
WORDS = ("memory bandwidth cache kernel tensor inference latency throughput quantization decode prefill "
         "attention batch tokens context accelerator interconnect power thermal cluster runtime scheduler "
         "mémoire débit calcul modèle réseau coût énergie précision format serveur grappe").split()


def words(rng, low, high):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def sentence(rng, low=12, high=30):
    text = words(rng, low, high)
    return text[0].upper() + text[1:] + "."


def quoted(text):
    """A YAML double-quoted scalar (JSON string escapes are valid YAML)."""
    return json.dumps(text, ensure_ascii=False)


def date(rng, first=2019, last=2025):
    """A date of a past year: the build refuses prices and offers observed after the day it runs."""
    return f"{rng.randint(first, last)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def counts(records):
    """Rows per table for about `records` records in all."""
    n = {table: max(1, round(records * share)) for table, share in SHARES.items()}
    n["vendors"] = max(3, n["accelerators"] // 25)
    n["providers"] = max(2, -(-n["cloud_offers"] // PER_FILE))
    n["publishers"] = max(1, -(-n["sources"] // PER_FILE))
    n["models"] = max(2, records // 2000)
    return n


class Generator:
    """Writes one synthetic data folder; every reference points at a row it wrote."""

    def __init__(self, out, records, seed):
        self.out, self.rng, self.n = Path(out), random.Random(seed), counts(records)
        self.sources = [f"synthetic-source-{i:06d}" for i in range(self.n["sources"])]
        self.vendors = [f"synthetic-vendor-{i:03d}" for i in range(self.n["vendors"])]
        self.accelerators = [f"{self.vendors[i % len(self.vendors)]}-x{i:05d}" for i in range(self.n["accelerators"])]
        self.topics = [f"topic-{i:02d}" for i in range(24)]
        self.categories = {"synthetic-en": [f"en-category-{i}" for i in range(8)],
                           "synthetic-fr": [f"fr-category-{i}" for i in range(8)]}

    def write(self, relative, text):
        path = self.out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# Synthetic benchmark data written by bench/generate.py.\n" + text, encoding="utf-8")

    def source(self):
        """Every source in turn first, then any: the build refuses a source nothing cites."""
        self.cited = getattr(self, "cited", 0) + 1
        return self.sources[self.cited - 1] if self.cited <= len(self.sources) else self.rng.choice(self.sources)

    def run(self):
        self.catalog()
        self.specs()
        self.write_sources()
        self.write_accelerators()
        self.write_offers()
        self.write_articles()
        self.write_models()
        self.write_electricity_price()

    def catalog(self):
        sites = "".join(f"  - slug: {site}\n    name: Synthetic site {site[-2:]}\n    languages: [{site[-2:]}]\n"
                        f"    description: {quoted(sentence(self.rng))}\n"
                        for site in self.categories)
        self.write("catalog/sites.yml", "sites:\n" + sites)
        self.write("catalog/categories.yml", "categories:\n" + "".join(
            f"  - {{slug: {c}, site: {site}, label_en: {quoted(words(self.rng, 1, 3))}, label_fr: null}}\n"
            for site, cats in self.categories.items() for c in cats))
        self.write("catalog/topics.yml", "topics:\n" + "".join(
            f"  - slug: {t}\n    label_en: {quoted(words(self.rng, 1, 3))}\n    label_fr: {quoted(words(self.rng, 1, 3))}\n"
            f"    description: {quoted(sentence(self.rng))}\n" for t in self.topics))

    def specs(self):
        vendors = "".join(f"  - {{slug: {v}, name: Synthetic vendor {i}, country: US, url: https://example.com/{v}}}\n"
                          for i, v in enumerate(self.vendors))
        self.write("specs/vendors.yml", "vendors:\n" + vendors)
        providers = "".join(f"  - {{slug: synthetic-cloud-{i:03d}, name: Synthetic cloud {i}, country: FR}}\n"
                            for i in range(self.n["providers"]))
        self.write("specs/providers.yml", "providers:\n" + providers)
        formats = "".join(f"  - slug: {slug}\n    name: {slug.upper()}\n    family: {slug}\n    kind: {kind}\n"
                          f"    bits: {bits}\n    source: {self.sources[0]}\n" for slug, bits, kind in PRECISIONS)
        self.write("specs/number_formats.yml", "number_formats:\n" + formats)
        for vendor in self.vendors:
            bandwidth = self.rng.choice((400, 600, 900, 1800))
            self.write(f"specs/interconnects/{vendor}.yml", (
                f"interconnects:\n  - slug: {vendor}-link\n    name: {vendor} link\n    vendor: {vendor}\n"
                f"    kind: gpu-gpu\n    per_direction_gbs: {bandwidth // 2} GB/s\n    bidirectional_gbs: {bandwidth} GB/s\n"
                f"    scope: per GPU\n    domain_size: {self.rng.choice((8, 72))}\n    source: {self.source()}\n"))

    def write_sources(self):
        for p in range(self.n["publishers"]):
            body = []
            for slug in self.sources[p * PER_FILE:(p + 1) * PER_FILE]:
                published = f"    published: {date(self.rng)}\n" if self.rng.random() < 0.6 else ""
                body.append(f"  - slug: {slug}\n    url: https://example.com/publisher-{p}/{slug}\n"
                            f"    title: {quoted(sentence(self.rng, 4, 10))}\n    publisher: Synthetic publisher {p}\n"
                            f"    kind: {self.rng.choice(SOURCE_KINDS)}\n    tier: {self.rng.choice(TIERS)}\n"
                            f"{published}    retrieved: {date(self.rng, 2025, 2025)}\n"
                            f"    note: >-\n      {sentence(self.rng, 20, 40)}\n")
            self.write(f"sources/publisher-{p:04d}.yml", "sources:\n" + "\n".join(body))

    def accelerator(self, slug, vendor):
        rng = self.rng
        bandwidth = round(rng.uniform(0.2, 8.0), 2)
        tdp = f"""
    tdp_w:
      value: {rng.randrange(15, 1400, 5)} W
      source: {self.source()}
      kind: vendor-spec
      note: {quoted(sentence(rng))}""" if rng.random() < 0.3 else f"\n    tdp_w: {rng.randrange(15, 1400, 5)} W"
        return (f"accelerators:\n  - slug: {slug}\n    vendor: {vendor}\n    name: Synthetic {slug.upper()}\n"
                f"    family: Family {rng.randint(1, 9)}\n    architecture: {quoted(words(rng, 2, 5))}\n"
                f"    device_class: {rng.choice(DEVICE_CLASSES)}\n    scope: device\n"
                f"    form_factor: {rng.choice(('SXM', 'PCIe', 'OAM', 'module'))}\n"
                f"    status: {rng.choice(('announced', 'shipping', 'discontinued'))}\n"
                f"    announced: {date(rng)[:7]}\n    memory_gb: {rng.choice(MEMORY_GB)} GB\n"
                f"    memory_type: {rng.choice(MEMORY_TYPES)}\n    memory_bandwidth_gbs: {bandwidth} TB/s{tdp}\n"
                f"    interconnect: {vendor}-link\n    interconnect_gbs: {rng.choice((64, 128, 900, 1800))} GB/s\n"
                f"    source: {self.source()}\n"
                f"    note: >-\n      {sentence(rng, 30, 60)}\n")

    def throughput(self, slug):
        rows = []
        combos = [(p, s) for p, _, _ in PRECISIONS for s in ("dense", "sparse-2-4")]
        dense = {p: round(self.rng.uniform(5, 5000), 1) for p, _, _ in PRECISIONS}  # a sparse figure is twice the dense one
        for precision, sparsity in self.rng.sample(combos, THROUGHPUT_PER_ACCELERATOR):
            unit = "TOPS" if precision.startswith("int") else "TFLOPS"
            value = dense[precision] * (2 if sparsity == "sparse-2-4" else 1)
            rows.append(f"  - accelerator: {slug}\n    precision: {precision}\n    sparsity: {sparsity}\n    engine: matrix\n"
                        f"    tflops: {value} {unit}\n    source: {self.source()}\n")
        return "\nthroughput:\n" + "".join(rows)

    def format_support(self, slug):
        chosen = self.rng.sample([p for p, _, _ in PRECISIONS], FORMATS_PER_ACCELERATOR)
        return "\nformat_support:\n" + "".join(
            f"  - accelerator: {slug}\n    format: {f}\n    source: {self.source()}\n" for f in chosen)

    def prices(self, slug):
        """A launch list price (the accelerator's launch_price_usd is derived from it), then street prices."""
        launch = (f"  - slug: {slug}-launch\n    accelerator: {slug}\n    kind: launch-list\n"
                  f"    amount: {self.rng.randrange(500, 40000, 100)}\n    currency: USD\n"
                  f"    observed: {date(self.rng, 2023)}\n    date_basis: stated\n    source: {self.source()}\n")
        return "\nprices:\n" + launch + "".join(
            f"  - slug: {slug}-street-{i}\n    accelerator: {slug}\n    kind: street\n"
            f"    amount: {round(self.rng.uniform(300, 45000), 2)}\n    currency: {self.rng.choice(('USD', 'EUR'))}\n"
            f"    observed: {date(self.rng, 2023)}\n    date_basis: stated\n"
            f"    region: {self.rng.choice(('US', 'EU', 'FR'))}\n"
            f"    source: {self.source()}\n" for i in range(PRICES_PER_ACCELERATOR))

    def write_accelerators(self):
        for i, slug in enumerate(self.accelerators):
            vendor = self.vendors[i % len(self.vendors)]
            text = self.accelerator(slug, vendor) + self.throughput(slug) + self.format_support(slug) + self.prices(slug)
            self.write(f"specs/accelerators/{slug}.yml", text)

    def write_offers(self):
        rng = self.rng
        for p in range(self.n["providers"]):
            provider, body = f"synthetic-cloud-{p:03d}", []
            for i in range(p * PER_FILE, min((p + 1) * PER_FILE, self.n["cloud_offers"])):
                gpus = rng.choice((1, 2, 4, 8))
                body.append(f"  - slug: {provider}-offer-{i:06d}\n    provider: {provider}\n"
                            f"    instance: {rng.choice('abcgp')}{gpus}.{rng.randint(1, 9)}xlarge\n"
                            f"    accelerator: {rng.choice(self.accelerators)}\n    gpu_count: {gpus}\n"
                            f"    price_per_hour: {round(gpus * rng.uniform(0.3, 6.5), 2)}\n    currency: {rng.choice(('USD', 'EUR'))}\n"
                            f"    vat_included: {rng.choice(('true', 'false'))}\n"
                            f"    billing: {rng.choice(('per-second', 'per-minute', 'per-hour'))}\n"
                            f"    region: region-{rng.randint(1, 12)}\n    country: {rng.choice(('FR', 'DE', 'US', 'NL'))}\n"
                            f"    observed: {date(rng, 2025)}\n    date_basis: observed\n    source: {self.source()}\n")
            if body:  # with few records, the last providers have no offer
                self.write(f"specs/cloud_offers/{provider}.yml", "cloud_offers:\n" + "\n".join(body))

    def article(self, slug, site, key, language):
        rng = self.rng
        # the language versions of one article are tagged alike (the build refuses them otherwise)
        tags = random.Random(key)
        accelerators = tags.sample(self.accelerators, min(len(self.accelerators), tags.randint(0, 3)))
        takeaways = "".join(f"\n  - {quoted(sentence(rng, 8, 20))}" for _ in range(rng.randint(0, 4)))
        return (f"articles:\n- slug: {slug}\n  site: {site}\n  language: {language}\n  translation_key: {key}\n"
                f"  category: {rng.choice(self.categories[site])}\n  title: {quoted(sentence(rng, 5, 12))}\n"
                f"  summary: {quoted(sentence(rng, 25, 50))}\n  takeaways:{takeaways or ' []'}\n"
                f"  published: {date(rng, 2024)}\n  reading_minutes: {rng.randint(3, 25)}\n"
                f"  author: Synthetic author {rng.randint(1, 20)}\n"
                f"  accelerators: [{', '.join(accelerators)}]\n  topics:\n" +
                "".join(f"  - {t}\n" for t in rng.sample(self.topics, rng.randint(1, 3))))

    def write_articles(self):
        for i in range(self.n["articles"]):
            key = f"synthetic-article-{i // 2:06d}"
            language = ("en", "fr")[i % 2]
            slug = key if language == "en" else f"{key}-fr"
            self.write(f"articles/{slug}.yml", self.article(slug, f"synthetic-{language}", key, language))

    def write_models(self):
        for i in range(self.n["models"]):
            slug, layers = f"synthetic-model-{i:03d}", self.rng.choice((24, 32, 48, 64, 80))
            self.write(f"specs/models/{slug}.yml", (
                f"models:\n  - slug: {slug}\n    name: Synthetic model {i}\n    organization: Synthetic lab\n"
                f"    total_params_b: {self.rng.choice((7.0, 13.0, 70.0, 405.0))}\n    layers: {layers}\n"
                f"    hidden_size: 8192\n    intermediate_size: 28672\n    vocab_size: 128256\n"
                f"    attention_heads: 64\n    kv_heads: 8\n    head_dim: 128\n    attention: gqa\n"
                f"    max_context: {self.rng.choice((8192, 131072))}\n    source: {self.source()}\n"))

    def write_electricity_price(self):
        """The price of the spec sheet's energy figures when the reader sets none: the slug serving reads."""
        self.write("measured/electricity-prices.yml", (
            f"electricity_prices:\n  - slug: {DEFAULT_ELECTRICITY_PRICE}\n    region: Synthetic region\n"
            f"    sector: commercial\n    period: '2023'\n    usd_per_kwh: 0.1\n    source: {self.source()}\n"))


def generate(out, records, seed=0):
    """Write a fresh synthetic data folder at `out`; refuses the real data folder."""
    out = Path(out).resolve()
    if out == ROOT / "data" or ROOT / "data" in out.parents:
        raise SystemExit(f"refusing to write synthetic data into {out}: pick a folder outside data/")
    if out.exists():
        shutil.rmtree(out)
    Generator(out, records, seed).run()
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, required=True, help="About how many records to write (1000, 10000, 100000).")
    parser.add_argument("--out", type=Path, required=True, help="Folder to (re)create; never data/.")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = generate(args.out, args.records, args.seed)
    files = sum(1 for _ in out.rglob("*.yml"))
    print(f"{files} files written under {out}")


if __name__ == "__main__":
    main()
