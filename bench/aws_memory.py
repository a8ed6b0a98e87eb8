"""Benchmark: peak memory of the AWS offer-file parse on a ~200 MB file (SYNTHETIC data).

Issue target: parsing a 200 MB EC2 offer file keeps peak memory under 150 MB.

The offer file is synthesised here (labelled SYNTHETIC in its ``disclaimer`` and ``version``)
with the real file's structure: a header, a ``products`` section with thousands of non-GPU
products (instance type x operating system x tenancy x pre-installed software x capacity
status, ~40 attributes each, as AWS lists them) plus GPU ones, then ``terms`` with an
``OnDemand`` term for every product and ``Reserved`` terms for most. It is written as a
stream, so building it does not raise this process's memory high-water mark.

Measured in one process, against baselines in the same process:

* the same ``AwsScraper.parse`` on the tiny real excerpt (tests/fixtures/aws/...);
* ``json.load`` of a ~20 MB file from the same generator (what loading, not streaming, costs).

For each: tracemalloc peak (Python allocations) and the ru_maxrss delta (the process's
resident high-water mark growth, which also sees C allocations), in MB, and the ratios.
Results are merged into ``bench/results.json`` under ``"aws_memory"``.

    .venv/bin/python bench/aws_memory.py [--mb 200] [--baseline-mb 20] [--keep]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import resource
import string
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import ijson  # noqa: E402
from filelock import FileLock  # noqa: E402

from scrapers.aws import AwsScraper  # noqa: E402

RESULTS = Path(__file__).parent / "results.json"
TINY_REAL = ROOT / "tests" / "fixtures" / "aws" / "aws_offer_file_ec2_us-east-1_p4d_excerpt_2024-05-28.json"
TARGET_MB = 150.0
SYNTHETIC = "SYNTHETIC benchmark file written by bench/aws_memory.py: not AWS data, not real prices"

NON_GPU_FAMILIES = {
    "m5": ("Intel Xeon Platinum 8175", ["large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge"]),
    "c5": ("Intel Xeon Platinum 8124M", ["large", "xlarge", "2xlarge", "4xlarge", "9xlarge", "12xlarge", "18xlarge", "24xlarge"]),
    "r5": ("Intel Xeon Platinum 8175", ["large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge"]),
    "m6i": ("Intel Xeon 8375C (Ice Lake)", ["large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge", "32xlarge"]),
    "c6i": ("Intel Xeon 8375C (Ice Lake)", ["large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge", "32xlarge"]),
    "r6i": ("Intel Xeon 8375C (Ice Lake)", ["large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge", "32xlarge"]),
    "m7g": ("AWS Graviton3 Processor", ["medium", "large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge"]),
    "c7g": ("AWS Graviton3 Processor", ["medium", "large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge"]),
    "t3": ("Intel Skylake E5 2686 v5", ["nano", "micro", "small", "medium", "large", "xlarge", "2xlarge"]),
    "i4i": ("Intel Xeon 8375C (Ice Lake)", ["large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge", "32xlarge"]),
}
GPU_TYPES = {  # instance type: (vcpu, memory GiB, gpus)
    "p4d.24xlarge": (96, 1152, 8), "p4de.24xlarge": (96, 1152, 8), "p5.48xlarge": (192, 2048, 8),
    "p5e.48xlarge": (192, 2048, 8), "g5.xlarge": (4, 16, 1), "g5.12xlarge": (48, 192, 4), "g5.48xlarge": (192, 768, 8),
    "g6.xlarge": (4, 16, 1), "g6.48xlarge": (192, 768, 8), "g6e.12xlarge": (48, 384, 4), "g4dn.xlarge": (4, 16, 1),
    "g4dn.12xlarge": (48, 192, 4), "g4ad.16xlarge": (64, 256, 4),
}
SIZES_VCPU = {"nano": 2, "micro": 2, "small": 2, "medium": 1, "large": 2, "xlarge": 4, "2xlarge": 8, "4xlarge": 16,
              "8xlarge": 32, "9xlarge": 36, "12xlarge": 48, "16xlarge": 64, "18xlarge": 72, "24xlarge": 96, "32xlarge": 128}
OPERATING_SYSTEMS = ["Linux", "Windows", "RHEL", "SUSE", "Red Hat Enterprise Linux with HA", "Ubuntu Pro"]
TENANCIES = ["Shared", "Dedicated", "Host"]
SOFTWARE = ["NA", "SQL Std", "SQL Web", "SQL Ent"]
CAPACITY = ["Used", "UnusedCapacityReservation", "AllocatedCapacityReservation"]


def _sku(rng: random.Random) -> str:
    return "".join(rng.choices(string.ascii_uppercase + string.digits, k=16))


def _product(sku: str, itype: str, vcpu: int, mem: int, gpus: int | None, processor: str, os_: str, tenancy: str,
             sw: str, cap: str) -> dict[str, Any]:
    return {
        "sku": sku,
        "productFamily": "Compute Instance",
        "attributes": {
            "servicecode": "AmazonEC2", "location": "US East (N. Virginia)", "locationType": "AWS Region",
            "instanceType": itype, "currentGeneration": "Yes",
            "instanceFamily": "GPU instance" if gpus else "General purpose", "vcpu": str(vcpu),
            "physicalProcessor": processor, "clockSpeed": "3 GHz", "memory": f"{mem} GiB", "storage": "EBS only",
            "networkPerformance": "Up to 25 Gigabit", "processorArchitecture": "64-bit", "tenancy": tenancy,
            "operatingSystem": os_, "licenseModel": "No License required",
            "usagetype": f"{'DedicatedUsage' if tenancy != 'Shared' else 'BoxUsage'}:{itype}",
            "operation": "RunInstances" if os_ == "Linux" else "RunInstances:0002", "availabilityzone": "NA",
            "capacitystatus": cap, "classicnetworkingsupport": "false", "dedicatedEbsThroughput": "Up to 4750 Mbps",
            "ecu": "NA", "enhancedNetworkingSupported": "Yes", "gpu": str(gpus) if gpus else "NA", "gpuMemory": "NA",
            "intelAvxAvailable": "Yes", "intelAvx2Available": "Yes", "intelTurboAvailable": "Yes",
            "marketoption": "OnDemand", "normalizationSizeFactor": "4", "preInstalledSw": sw,
            "processorFeatures": "Intel AVX; Intel AVX2; Intel AVX512; Intel Turbo", "regionCode": "us-east-1",
            "servicename": "Amazon Elastic Compute Cloud", "vpcnetworkingsupport": "true",
        },
    }


def _catalogue(rng: random.Random) -> list[tuple[str, int, int, int | None, str]]:
    """(instance type, vcpu, memory, gpus, processor) of every type in the synthetic file."""
    types: list[tuple[str, int, int, int | None, str]] = []
    for family, (processor, sizes) in NON_GPU_FAMILIES.items():
        for size in sizes:
            v = SIZES_VCPU[size]
            types.append((f"{family}.{size}", v, v * 4, None, processor))
    for itype, (v, mem, gpus) in GPU_TYPES.items():
        types.append((itype, v, mem, gpus, "AMD EPYC 7R13 Processor"))
    rng.shuffle(types)
    return types


def _variants(types: list[tuple[str, int, int, int | None, str]]) -> Iterator[tuple[Any, ...]]:
    """Instance type x OS x tenancy x software x capacity status, until the caller stops.

    After the first round, only non-GPU types repeat, under new family names, so no instance
    type is listed twice with the same attributes (as in a real file).
    """
    round_ = 0
    while True:
        for os_ in OPERATING_SYSTEMS:
            for tenancy in TENANCIES:
                for sw in SOFTWARE:
                    for cap in CAPACITY:
                        for itype, *rest in types:
                            gpus = rest[2]
                            if round_ and gpus:
                                continue
                            name = f"x{round_}{itype}" if round_ else itype
                            yield (name, *rest, os_, tenancy, sw, cap, round_)
        round_ += 1


def _on_demand(sku: str, price: float, itype: str) -> dict[str, Any]:
    return {f"{sku}.JRTCKXETXF": {
        "offerTermCode": "JRTCKXETXF", "sku": sku, "effectiveDate": "2024-05-01T00:00:00Z",
        "priceDimensions": {f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
            "rateCode": f"{sku}.JRTCKXETXF.6YS6EN2CT7",
            "description": f"${price:.4f} per On Demand Linux {itype} Instance Hour (SYNTHETIC)",
            "beginRange": "0", "endRange": "Inf", "unit": "Hrs", "pricePerUnit": {"USD": f"{price:.10f}"}, "appliesTo": []}},
        "termAttributes": {}}}


def _reserved(sku: str, price: float, rng: random.Random) -> dict[str, Any]:
    terms = {}
    for code, (length, option) in zip(("38NPMPTW36", "4NA7Y494T4", "6QCMYABX3D", "7NE97W5U4E"),
                                      (("1yr", "Partial Upfront"), ("1yr", "No Upfront"), ("3yr", "All Upfront"), ("3yr", "No Upfront"))):
        terms[f"{sku}.{code}"] = {
            "offerTermCode": code, "sku": sku, "effectiveDate": "2024-05-01T00:00:00Z",
            "priceDimensions": {
                f"{sku}.{code}.2TG2D8R56U": {"rateCode": f"{sku}.{code}.2TG2D8R56U", "description": "Upfront Fee",
                                             "unit": "Quantity", "pricePerUnit": {"USD": f"{price * 4000 * rng.random():.10f}"}, "appliesTo": []},
                f"{sku}.{code}.6YS6EN2CT7": {"rateCode": f"{sku}.{code}.6YS6EN2CT7", "description": "SYNTHETIC reserved hour",
                                             "beginRange": "0", "endRange": "Inf", "unit": "Hrs",
                                             "pricePerUnit": {"USD": f"{price * 0.6:.10f}"}, "appliesTo": []}},
            "termAttributes": {"LeaseContractLength": length, "OfferingClass": "standard", "PurchaseOption": option}}
    return terms


def _entry(key: str, value: Any, indent: int) -> str:
    """``"key" : {...}`` pretty-printed at ``indent`` spaces, as in the real offer files."""
    pad = " " * indent
    return f"{pad}{json.dumps(key)} : " + json.dumps(value, indent=2).replace("\n", "\n" + pad)


def write_synthetic_offer_file(path: Path, target_mb: float, seed: int = 42) -> dict[str, Any]:
    """Stream a SYNTHETIC EC2 offer file of about ``target_mb`` MB to ``path``; return its stats."""
    rng = random.Random(seed)
    types = _catalogue(rng)
    # Calibrate the bytes per product (product + OnDemand term + Reserved terms for 4 in 5) on one
    # sample, formatted exactly as written below.
    x = "X" * 16
    sample = _product(x, "m5.large", 2, 8, None, "Intel Xeon Platinum 8175", "Linux", "Shared", "NA", "Used")
    per_product = (len(_entry(x, sample, 4)) + len(_entry(x, _on_demand(x, 1.0, "m5.large"), 6))
                   + 0.8 * len(_entry(x, _reserved(x, 1.0, random.Random(0)), 6)))
    n_products = max(1, int(target_mb * 1e6 / per_product))
    skus: list[tuple[str, float, str]] = []  # kept small: (sku, price, instance type)
    gpu_passing = 0
    with path.open("w", buffering=1 << 20) as out:
        header = {"formatVersion": "v1.0", "disclaimer": SYNTHETIC, "offerCode": "AmazonEC2",
                  "version": "synthetic-benchmark", "publicationDate": "2024-05-28T20:35:22Z"}
        out.write("{\n" + ",\n".join(f"  {json.dumps(k)} : {json.dumps(v)}" for k, v in header.items()) + ",\n")
        out.write('  "products" : {\n')
        variants = _variants(types)
        for i in range(n_products):
            itype, vcpu, mem, gpus, processor, os_, tenancy, sw, cap, _round = next(variants)
            sku = _sku(rng)
            price = round((gpus or 0) * 4.1 + vcpu * 0.048 + rng.random() * 0.01, 4)
            product = _product(sku, itype, vcpu, mem, gpus, processor, os_, tenancy, sw, cap)
            out.write(("" if i == 0 else ",\n") + _entry(sku, product, 4))
            skus.append((sku, price, itype))
            if gpus and (os_, tenancy, sw, cap) == ("Linux", "Shared", "NA", "Used"):
                gpu_passing += 1
        out.write('\n  },\n  "terms" : {\n    "OnDemand" : {\n')
        for i, (sku, price, itype) in enumerate(skus):
            out.write(("" if i == 0 else ",\n") + _entry(sku, _on_demand(sku, price, itype), 6))
        out.write('\n    },\n    "Reserved" : {\n')
        first = True
        for i, (sku, price, _itype) in enumerate(skus):
            if i % 5 == 4:  # not every product has reserved terms
                continue
            out.write(("" if first else ",\n") + _entry(sku, _reserved(sku, price, rng), 6))
            first = False
        out.write('\n    }\n  },\n  "attributesList" : { }\n}\n')
    return {"products": n_products, "gpu_products_passing_filters": gpu_passing, "bytes": path.stat().st_size}


def _maxrss_mb() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return usage / 2**20 if sys.platform == "darwin" else usage / 1024  # bytes on macOS, KiB on Linux


def _current_rss_mb() -> float | None:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class _RssSampler(threading.Thread):
    """Samples the current RSS every few ms (Linux), for the peak *during* one call."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = _current_rss_mb() or 0.0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(0.005):
            rss = _current_rss_mb()
            if rss is not None and rss > self.peak:
                self.peak = rss

    def stop(self) -> float:
        self._stop_event.set()
        self.join()
        return self.peak


def measure(label: str, fn: Callable[[], Any], *, trace: bool) -> dict[str, float]:
    """Run ``fn`` once; wall time plus the tracemalloc peak, or the ru_maxrss growth and sampled RSS peak."""
    gc.collect()
    out: dict[str, float] = {}
    if trace:
        tracemalloc.start()
        tracemalloc.reset_peak()
    else:
        rss_before = _current_rss_mb()
        sampler = _RssSampler()
        sampler.start()
    before = _maxrss_mb()
    start = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - start
    out["seconds"] = round(elapsed, 2)
    if trace:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out["tracemalloc_peak_mb"] = round(peak / 2**20, 2)
    else:
        sampled_peak = sampler.stop()
        out["maxrss_before_mb"] = round(before, 1)
        out["maxrss_delta_mb"] = round(_maxrss_mb() - before, 1)
        if rss_before is not None:
            out["rss_before_mb"] = round(rss_before, 1)
            out["rss_sampled_peak_delta_mb"] = round(sampled_peak - rss_before, 1)
    del result
    print(f"  {label:44} " + "  ".join(f"{k}={v}" for k, v in out.items()), flush=True)
    return out


def _generate_in_child(path: Path, mb: float, seed: int) -> dict[str, Any]:
    """Write the file from a child process, so generating it leaves this process's high-water mark alone."""
    proc = subprocess.run(
        [sys.executable, __file__, "--generate", str(path), "--mb", str(mb), "--seed", str(seed)],
        check=True, capture_output=True, text=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=200.0, help="size of the synthetic offer file to parse")
    ap.add_argument("--baseline-mb", type=float, default=20.0, help="size of the file json.load reads as a baseline")
    ap.add_argument("--keep", action="store_true", help="keep the synthetic files (printed paths)")
    ap.add_argument("--generate", metavar="PATH", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=42, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.generate:
        print(json.dumps(write_synthetic_offer_file(Path(args.generate), args.mb, args.seed)))
        return

    tmp = Path(tempfile.mkdtemp(prefix="bench-aws-memory-"))
    big, small = tmp / "synthetic_ec2_offer_file_big.json", tmp / "synthetic_ec2_offer_file_small.json"
    scraper = AwsScraper(env={})
    try:
        print(f"aws offer-file memory benchmark (SYNTHETIC offer files, ijson backend {ijson.backend})", flush=True)
        t0 = time.perf_counter()
        stats_big = _generate_in_child(big, args.mb, 42)
        stats_small = _generate_in_child(small, args.baseline_mb, 7)
        big_mb, small_mb = stats_big["bytes"] / 1e6, stats_small["bytes"] / 1e6
        print(f"  wrote {big_mb:.1f} MB ({stats_big['products']} products, "
              f"{stats_big['gpu_products_passing_filters']} GPU products passing the filters) and "
              f"{small_mb:.1f} MB in {time.perf_counter() - t0:.1f}s (child process)", flush=True)

        def load_small() -> Any:
            with small.open("rb") as fh:
                return json.load(fh)

        # ru_maxrss is a high-water mark: measure RSS for the streaming parses first (tiny
        # baseline, then the big file), then json.load, each without tracemalloc (it adds its
        # own overhead); the tracemalloc peaks come after.
        rss_tiny = measure("parse tiny real excerpt (rss)", lambda: scraper.parse(TINY_REAL), trace=False)
        rss_big = measure(f"parse {big_mb:.0f} MB synthetic (rss)", lambda: scraper.parse(big), trace=False)
        rss_load = measure(f"json.load {small_mb:.0f} MB synthetic (rss)", load_small, trace=False)
        tm_tiny = measure("parse tiny real excerpt (tracemalloc)", lambda: scraper.parse(TINY_REAL), trace=True)
        tm_big = measure(f"parse {big_mb:.0f} MB synthetic (tracemalloc)", lambda: scraper.parse(big), trace=True)
        tm_load = measure(f"json.load {small_mb:.0f} MB synthetic (tracemalloc)", load_small, trace=True)
        offers = scraper.parse(big)

        peak_parse = max(tm_big["tracemalloc_peak_mb"], rss_big["maxrss_delta_mb"], rss_big.get("rss_sampled_peak_delta_mb", 0.0))
        result = {
            "data": "SYNTHETIC offer files with the real EC2 structure (bench/aws_memory.py)",
            "ijson_backend": ijson.backend,
            "python": platform.python_version(),
            "file_mb": round(big_mb, 1),
            "products": stats_big["products"],
            "gpu_products_passing_filters": stats_big["gpu_products_passing_filters"],
            "offers_emitted": len(offers),
            "parse_seconds": rss_big["seconds"],
            "parse_mb_per_s": round(big_mb / rss_big["seconds"], 1) if rss_big["seconds"] else None,
            "parse_tracemalloc_peak_mb": tm_big["tracemalloc_peak_mb"],
            "parse_maxrss_delta_mb": rss_big["maxrss_delta_mb"],
            "parse_rss_sampled_peak_delta_mb": rss_big.get("rss_sampled_peak_delta_mb"),
            "process_maxrss_before_parse_mb": rss_big["maxrss_before_mb"],
            "baseline_tiny_parse_tracemalloc_peak_mb": tm_tiny["tracemalloc_peak_mb"],
            "baseline_tiny_parse_maxrss_delta_mb": rss_tiny["maxrss_delta_mb"],
            "baseline_json_load_file_mb": round(small_mb, 1),
            "baseline_json_load_tracemalloc_peak_mb": tm_load["tracemalloc_peak_mb"],
            "baseline_json_load_maxrss_delta_mb": rss_load["maxrss_delta_mb"],
            "ratio_parse_over_tiny_parse_tracemalloc": round(tm_big["tracemalloc_peak_mb"] / max(tm_tiny["tracemalloc_peak_mb"], 0.01), 1),
            "ratio_parse_over_json_load_tracemalloc": round(tm_big["tracemalloc_peak_mb"] / tm_load["tracemalloc_peak_mb"], 3),
            "ratio_parse_over_json_load_maxrss": round(rss_big["maxrss_delta_mb"] / rss_load["maxrss_delta_mb"], 3) if rss_load["maxrss_delta_mb"] else None,
            "parse_peak_mb": round(peak_parse, 1),
            "target_peak_mb": TARGET_MB,
            "meets_target": peak_parse < TARGET_MB,
        }
        print("results")
        for k, v in result.items():
            print(f"  {k:44} {v}")
        with FileLock(str(RESULTS) + ".lock"):
            data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
            data["aws_memory"] = result
            tmp_out = RESULTS.with_suffix(".json.tmp")
            tmp_out.write_text(json.dumps(data, indent=2) + "\n")
            os.replace(tmp_out, RESULTS)
        Path(str(RESULTS) + ".lock").unlink(missing_ok=True)
    finally:
        if args.keep:
            print(f"  kept {big} and {small}")
        else:
            for p in (big, small):
                p.unlink(missing_ok=True)
            tmp.rmdir()


if __name__ == "__main__":
    main()
