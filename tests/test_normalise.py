"""GPU-name normalisation, table-driven over every GPU string of every recorded payload.

``tests/fixtures/gpu_names.csv`` lists (provider, raw, memory_gb, via, expected, note) for
each GPU string in ``../shared/provider-samples`` (Vast gpu_name + gpu_ram, RunPod id and
displayName + memoryInGb and its pricing page, GCP SKU descriptions and the (model, memory)
``scrapers/gcp.py`` extracts, Azure armSkuName/meterName/productName, AWS instance types, OCI
part names, the HTML pages' GPU names, the handmade JSON names and plan ids). ``expected`` was
judged by hand from the provider's docs and the reference table, not produced by the
resolver; empty = ``None`` (unknown to the catalog, or ambiguous). ``via=instance`` rows are
instance types / plan ids, answered only by ``tracker/catalog/data/instance_types.csv``.
"""

from __future__ import annotations

import csv

import pytest

from tests.conftest import fixture_path
from tests.gpu_name_samples import SAMPLES, sample_gpu_strings
from tracker.catalog.instance_types import instance_gpu
from tracker.catalog.names import clean, looks_like_instance_type
from tracker.catalog.specs import load_catalog, resolve_gpu


def fixture_rows() -> list[dict[str, str]]:
    with fixture_path("gpu_names.csv").open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


ROWS = fixture_rows()


def memory(row: dict[str, str]) -> float | None:
    return float(row["memory_gb"]) if row["memory_gb"] else None


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['provider']}:{r['raw']}:{r['memory_gb']}")
def test_every_recorded_gpu_string(row: dict[str, str]) -> None:
    expected = row["expected"] or None
    got = resolve_gpu(row["raw"], memory(row), provider=row["provider"])
    assert got == expected, f"{row['note']}: {row['raw']!r} ({row['memory_gb'] or 'no'} GB) -> {got}, expected {expected}"
    if row["via"] == "instance":
        hit = instance_gpu(row["raw"], row["provider"])
        assert (hit[0] if hit else None) == expected


def test_the_table_is_big_and_mixed() -> None:
    assert len(ROWS) > 500
    assert {r["provider"] for r in ROWS} >= {
        "vastai", "runpod", "gcp", "azure", "aws", "oci", "modal", "lambda", "datacrunch", "coreweave",
        "nebius", "crusoe", "paperspace", "vultr", "digitalocean", "jarvislabs", "cudo", "tensordock",
    }
    mapped = {r["expected"] for r in ROWS if r["expected"]}
    assert len(mapped) >= 30
    assert sum(1 for r in ROWS if not r["expected"]) >= 100  # unknown names stay unmapped


def test_expected_ids_exist_in_the_catalog() -> None:
    catalog = load_catalog()
    assert {r["expected"] for r in ROWS if r["expected"]} <= set(catalog)


def test_the_table_covers_every_string_in_the_shared_samples() -> None:
    if not SAMPLES.exists():
        pytest.skip("../shared/provider-samples is not beside this checkout")
    have = {(r["provider"], r["raw"], r["memory_gb"]) for r in ROWS}
    missing = []
    for provider, raw, mem, _via, note in sample_gpu_strings():
        m = "" if mem is None else (str(int(mem)) if float(mem).is_integer() else f"{mem:.4f}")
        if (provider, raw, m) not in have:
            missing.append((provider, raw, m, note))
    assert not missing, missing


# The documented rules, one case each (see tracker/catalog/names.py).
RULES = [
    # form factor and memory keep variants apart
    ("H100", None, "H100-SXM"),  # bare H100 = the SXM part
    ("H100", 94, "H100-NVL"),  # the only 94 GB H100
    ("H100", 96, None),  # an H100 96GB (SXM5 96GB) is not in the catalog
    ("H100 NVL 96GB", None, "H100-NVL"),  # 96 GB physical, 94 usable
    ("H100 80GB PCIe", None, "H100-PCIe"),
    ("NVIDIA H100 PCIe", 94, None),  # contradiction
    ("H100 NVL", None, "H100-NVL"),
    ("H100 PCIe NVL", None, None),  # two forms
    ("H100 NVL (94GB) NVLink", None, "H100-NVL"),  # NVL cards joined by an NVLink bridge: not SXM
    ("H200 NVL (141GB) NVLink", None, "H200-NVL"),
    ("NVIDIA H100 80GB HBM3", None, "H100-SXM"),
    ("A100", None, None),  # 40 or 80 GB: not said
    ("A100", 80, "A100-SXM-80GB"),
    ("A100 40GB", None, "A100-SXM-40GB"),
    ("A100 PCIe", None, None),
    ("A100 PCIe", 40, "A100-PCIe-40GB"),
    ("A100-PCIE-80GB", None, "A100-PCIe-80GB"),
    ("A100 80GB", 40, None),  # name and memory disagree
    ("A100X", 80, "A100X"),  # the converged card, not an A100 PCIe
    ("H200", None, "H200"),
    ("H200 NVL", 141, "H200-NVL"),
    ("H200 PCIe", None, "H200-NVL"),
    ("GH200", None, "GH200-96GB"),
    ("GH200 480GB", None, "GH200-96GB"),
    ("GH200 144GB", None, "GH200-144GB"),
    ("NVIDIA GH200 HBM3e", None, "GH200-144GB"),
    ("GH200", 144, "GH200-144GB"),
    ("B200", None, "B200"),
    ("HGX B200 192GB", None, "B200"),
    ("GB200 NVL72", None, "GB200"),
    ("B100", None, "B100"),
    ("NVIDIA HGX B300", None, "B300"),
    ("NVIDIA B300", 288, "B300"),
    ("NVIDIA GB300 NVL72", None, "GB300"),
    ("B300", 192, None),
    ("L40", None, "L40"),
    ("L40S", None, "L40S"),
    ("L4", None, "L4"),
    ("A10", None, "A10"),
    ("A10G", None, "A10G"),
    ("NVIDIA A10G", 24, "A10G"),
    ("RTX 6000 Ada", None, "RTX-6000-Ada"),
    ("RTX6000Ada", None, "RTX-6000-Ada"),
    ("RTX A6000", None, "RTX-A6000"),
    ("RTX 6000", None, None),  # Quadro RTX 6000 or RTX 6000 Ada: not said
    ("Quadro RTX 6000", 24, "Quadro-RTX-6000"),
    ("Q RTX 6000", 24, "Quadro-RTX-6000"),  # Vast's abbreviation
    ("NVIDIA Quadro RTX 6000", None, "Quadro-RTX-6000"),  # never merged with the Ada card
    ("RTX 6000", 24, "Quadro-RTX-6000"),  # the Turing card's memory
    ("RTX 6000", 48, None),  # the Ada card's memory but "Ada" not said
    ("RTX PRO 6000", 96, "RTX-PRO-6000"),
    ("RTX-PRO6000", 96, "RTX-PRO-6000"),
    ("NVIDIA RTX Pro 6000 SE", 96, "RTX-PRO-6000"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 96, "RTX-PRO-6000"),
    ("RTX PRO 6000 Blackwell Max-Q Workstation Edition", 96, None),  # the 300 W card
    # workstation cards: the Ampere RTX A-series, the Ada "RTX 4000 Ada" and the Turing Quadro
    ("RTX A5000", 24, "RTX-A5000"),
    ("A5000", None, "RTX-A5000"),  # Paperspace writes it without "RTX"
    ("RTX A5000", 48, None),  # memory contradicts the card
    ("RTX A4000", 16, "RTX-A4000"),
    ("NVIDIA A4000 GPU", None, "RTX-A4000"),
    ("RTX A4500", 20, "RTX-A4500"),  # not an A4000 or A5000
    ("RTX A2000", 6, "RTX-A2000"),
    ("RTX A2000", 12, "RTX-A2000-12GB"),
    ("RTX A2000", None, None),  # 6 or 12 GB
    ("RTX 4000 Ada", 20, "RTX-4000-Ada"),
    ("RTX 4000Ada", None, "RTX-4000-Ada"),
    ("NVIDIA RTX 4000 Ada Generation", 20, "RTX-4000-Ada"),
    ("RTX 4000 Ada", 16, None),  # memory contradicts the card
    ("RTX 4000 SFF Ada", 20, None),  # the 70 W SFF card is another product
    ("NVIDIA RTX 4000 SFF Ada Generation", 20, None),
    ("Quadro RTX 4000", 8, "Quadro-RTX-4000"),  # Turing, not the RTX 4000 Ada
    ("RTX4000", None, None),  # Paperspace's Quadro RTX 4000, only with provider="paperspace"
    ("RTX 4000 Ada", 8, None),  # memory contradicts the Ada card
    ("RTX 4000", 20, None),  # "Ada" not said: never guessed
    ("RTX PRO 4000 Blackwell", 24, None),
    ("RTX 5000 Ada", 32, "RTX-5000-Ada"),
    ("RTX 5000Ada", 32, "RTX-5000-Ada"),
    ("Quadro RTX 5000", 16, "Quadro-RTX-5000"),
    ("RTX 5000", 32, None),  # the Ada card's memory but "Ada" not said
    ("NVIDIA RTX 2000 Ada Generation", 16, "RTX-2000-Ada"),
    ("RTX A4000 Ada", None, None),  # nonsense mix: no family wins
    ("A30", 24, "A30"),
    ("NVIDIA A30", None, "A30"),
    ("A30", 80, None),
    ("A300", None, None),
    ("RTX 4090", 24, "RTX-4090"),
    ("RTX4090", None, "RTX-4090"),
    ("GeForce RTX 4090", None, "RTX-4090"),
    ("RTX 4090 D", None, None),
    ("RTX 4090D", 24, None),
    ("RTX 4090", 48, None),  # a 48 GB modded card is not the catalog's 4090
    ("RTX 4090 Laptop GPU", 16, None),
    ("RTX 4080 SUPER", None, "RTX-4080-SUPER"),
    ("RTX 4080S", 16, "RTX-4080-SUPER"),
    ("RTX 4080", 16, "RTX-4080"),
    ("RTX 4070", 12, "RTX-4070"),
    ("RTX 4070S", 12, "RTX-4070-SUPER"),
    ("RTX 4070 SUPER", None, "RTX-4070-SUPER"),
    ("RTX 4070 Ti", 12, "RTX-4070-Ti"),
    ("RTX 4060", 8, "RTX-4060"),
    ("NVIDIA GeForce RTX 5080", 16, "RTX-5080"),
    ("RTX 4070 Ti SUPER", None, "RTX-4070-Ti-SUPER"),
    ("RTX 4070 Ti", 16, None),  # 12 GB card: memory contradicts
    ("RTX 5070 Ti", 16, "RTX-5070-Ti"),
    ("RTX 4060 Ti", None, None),  # 8 or 16 GB
    ("RTX 4060 Ti", 8, None),
    ("RTX 4060 Ti 16GB", None, "RTX-4060-Ti-16GB"),
    ("RTX 3090 Ti", None, "RTX-3090-Ti"),
    ("RTX 3090", None, "RTX-3090"),
    ("RTX 3080", 10, "RTX-3080"),
    ("RTX 3080", 12, "RTX-3080-12GB"),  # the 12 GB card has more cores
    ("RTX 3080", None, None),  # 10 or 12 GB
    ("RTX 3080 Ti", 12, "RTX-3080-Ti"),
    ("RTX 3060", 12, "RTX-3060"),
    ("RTX 3060", 8, None),  # the 8 GB card is not in the catalog
    ("RTX 3060 laptop", 12, None),
    ("RTX 3060 Ti", 8, "RTX-3060-Ti"),
    ("RTX 2080 Ti", 11, "RTX-2080-Ti"),
    ("RTX 2080", 8, None),  # not in the catalog; not the SUPER or the Ti
    ("RTX 2080S", 8, "RTX-2080-SUPER"),
    ("RTX 2060S", 8, "RTX-2060-SUPER"),
    ("RTX 2060", 12, "RTX-2060-12GB"),
    ("RTX 2060", 6, None),  # the 6 GB card is another product
    ("GTX 1660 S", 6, "GTX-1660-SUPER"),
    ("GTX 1660 Ti", 6, "GTX-1660-Ti"),
    ("GTX 1660", 6, "GTX-1660"),
    ("GTX 1080 Ti", 11, "GTX-1080-Ti"),
    ("GTX 1060", 3, "GTX-1060-3GB"),
    ("GTX 1060", 6, None),  # the 6 GB card has more cores
    ("GTX 1650 GDDR6", 4, None),
    ("Titan V", 12, "TITAN-V"),
    ("Titan Xp", 12, "TITAN-Xp"),
    ("Quadro K2200", 4, "Quadro-K2200"),
    ("P5000", 16, "Quadro-P5000"),
    ("RTX 5090", None, "RTX-5090"),
    ("Tesla T4", None, "T4"),
    ("Tesla V100", 16, None),  # SXM2 or PCIe: not said
    ("Tesla V100-FHHL-16GB", 16, "V100-FHHL-16GB"),  # the half-length board
    ("Tesla V100-SXM2-16GB", None, "V100-SXM-16GB"),
    ("V100 PCIe 32GB", None, "V100-PCIe-32GB"),
    ("V100 PCIe", None, None),
    ("V100S", 32, None),
    ("Tesla P100", 16, None),
    ("Tesla P100-PCIE-16GB", None, "P100"),
    ("P100 PCIe", 12, None),
    ("Tesla K80", None, None),
    ("Tesla K80", 12, None),  # one GK210 die, not the catalog's board
    ("Tesla K80", 24, "K80"),
    ("A800", 80, None),
    ("A800 PCIe 80GB", None, "A800-PCIe-80GB"),
    ("A800-SXM4-80GB", None, "A800-SXM-80GB"),
    ("MI300X", None, "MI300X"),
    ("AMD Instinct MI325X", 256, "MI325X"),
    ("MI355X", None, "MI355X"),
    ("MI250X", 64, None),  # one of its two GCDs
    ("MI250X", None, "MI250X"),
    ("Intel Gaudi 3", None, "Gaudi3"),
    ("HL-325L", None, "Gaudi3"),
    ("Gaudi3 PCIe", None, None),
    ("A100 MIG 1g.10gb", None, None),
    ("H100 vs A100", None, None),
    # canonical ids spelt as such
    ("A100-PCIe-80GB", None, "A100-PCIe-80GB"),
    ("a100-pcie-80gb", 40, None),
    ("RTX-4090", None, "RTX-4090"),
    ("P100", None, None),  # bare P100 is a name, and ambiguous
    # instance types never go through the name rules
    ("Standard_NC40ads_H100_v9", None, None),
    ("p4d.48xlarge", None, None),
    ("BM.GPU.H100.8", None, None),
    ("1H100.80S.30V", None, None),
    ("a3-highgpu-8g", None, "H100-SXM"),
    # glued forms resolve like their spaced forms
    ("H100SXM", None, "H100-SXM"),
    ("H100SXM5", None, "H100-SXM"),
    ("H100-80GB-SXM5", None, "H100-SXM"),
    ("H100PCIe", None, "H100-PCIe"),
    ("H100NVL", None, "H100-NVL"),
    ("H200NVL", None, "H200-NVL"),
    ("B200SXM", None, "B200"),
    ("A10080GB", None, "A100-SXM-80GB"),
    ("A100SXM4", None, None),  # still needs its memory
    ("A100SXM4", 40, "A100-SXM-40GB"),
    ("RTXPRO6000", None, "RTX-PRO-6000"),
    ("RTX 6000 Pro", None, "RTX-PRO-6000"),
    ("RTXA6000", None, "RTX-A6000"),
    ("RTXPRO6000Blackwell", None, "RTX-PRO-6000"),
    ("NVIDIA_RTX_PRO_6000_Blackwell_Server", None, "RTX-PRO-6000"),
    ("rtx_pro_4500", None, "RTX-PRO-4500"),
    ("RTX PRO 4500 Blackwell (32GB)", None, "RTX-PRO-4500"),
    ("RTXPRO4500", None, "RTX-PRO-4500"),
    ("RTX A4500", None, "RTX-A4500"),  # the Ampere card stays its own row
    ("RTX PRO 4500 SE", 32, None),  # the Server Edition is not in the catalog
    ("MI300X-192GB", None, "MI300X"),
    ("MI300X192GB", None, "MI300X"),
    ("MI355X-288GB", None, "MI355X"),
    ("GB200NVL72", None, "GB200"),
    ("GB300 NVL72", None, "GB300"),
    ("L4048GB", None, "L40"),
    ("H100x8", None, None),  # not a known part glued on: stays unknown
    ("MI300XMIG", None, None),
    # junk
    ("", None, None),
    ("   ", None, None),
    ("GPU", None, None),
    ("8x", 0, None),
]


@pytest.mark.parametrize(("raw", "mem", "expected"), RULES)
def test_documented_rules(raw: str, mem: float | None, expected: str | None) -> None:
    assert resolve_gpu(raw, mem) == expected


def test_paperspace_names_its_quadro_and_v100_machines() -> None:
    assert resolve_gpu("NVIDIA RTX4000", provider="paperspace") == "Quadro-RTX-4000"
    assert resolve_gpu("RTX5000", provider="paperspace") == "Quadro-RTX-5000"
    assert resolve_gpu("V100", 16, provider="paperspace") == "V100-PCIe-16GB"  # "112 TeraFLOPS"
    assert resolve_gpu("V100", 16) is None  # elsewhere the form factor is not known
    assert resolve_gpu("NVIDIA RTX4000", provider="runpod") is None


def test_scaleways_p100_is_its_pcie_render_card() -> None:
    assert resolve_gpu("NVIDIA P100", 16, provider="scaleway") == "P100"
    assert resolve_gpu("NVIDIA P100", 12, provider="scaleway") is None  # not the 16 GB card
    assert resolve_gpu("NVIDIA P100", 16) is None  # elsewhere SXM2 and PCIe both had 16 GB
    assert resolve_gpu("Tesla P100", 16, provider="vastai") is None


def test_oci_parts_resolve_through_the_table() -> None:
    assert resolve_gpu("Compute - GPU - A100 - v2", provider="oci") == "A100-SXM-80GB"
    assert resolve_gpu("Compute - GPU - E3", provider="oci") is None  # the part does not name its GPU


def test_vultr_fractional_a100_is_not_a_full_gpu() -> None:
    assert resolve_gpu("NVIDIA_A100", 40, provider="vultr") is None
    assert resolve_gpu("NVIDIA_A100", 80, provider="vultr") == "A100-SXM-80GB"
    assert resolve_gpu("NVIDIA_A100", 40) == "A100-SXM-40GB"  # without the provider: a 40 GB A100


def test_azure_instance_types_resolve_through_the_table() -> None:
    # Standard_NC40ads_H100_v5 holds an H100 NVL: a name parser would have said H100-SXM
    if instance_gpu("Standard_NC40ads_H100_v5", "azure") is None:
        pytest.skip("the Azure rows of instance_types.csv are not there")
    assert resolve_gpu("Standard_NC40ads_H100_v5", provider="azure") == "H100-NVL"
    assert resolve_gpu("standard_nc40ads_h100_v5") == "H100-NVL"


@pytest.mark.parametrize(
    ("raw", "cleaned"),
    [
        ("NVIDIA_RTX6000Ada", "nvidia rtx 6000 ada"),
        ("RTX 4070S Ti", "rtx 4070 super ti"),
        ("GTX 1660 S", "gtx 1660 super"),
        ("RTX 4090D", "rtx 4090 d"),
        ("8x H100 SXM5 80GB", "h100 sxm5 80gb"),
        ("Nvidia A100, 80 GB", "nvidia a100 80 gb"),
        ("Tesla V100-PCIE-16GB", "tesla v100 pcie 16gb"),
        ("RTX-PRO6000", "rtx pro 6000"),
        ("RTX 4000 Ada Max-Q", "rtx 4000 ada maxq"),
        ("H100SXM5", "h100 sxm5"),
        ("NVIDIA-H100-80GB-SXM5", "nvidia h100 80gb sxm5"),
        ("RTXPRO6000", "rtx pro 6000"),
        ("MI300X-192GB", "mi300x 192gb"),
        ("GB200NVL72", "gb200 nvl72"),
        ("H100x8", "h100x8"),
    ],
)
def test_clean(raw: str, cleaned: str) -> None:
    assert clean(raw) == cleaned


@pytest.mark.parametrize(
    "raw",
    ["Standard_ND96isr_H100_v5", "p5.48xlarge", "p6-b200.48xlarge", "g4dn.metal", "a3-highgpu-8g", "a4x-highgpu-4g",
     "g2-standard-96", "BM.GPU.A100-v2.8", "VM.GPU.A10.1", "1A100.22V", "8B200.240V", "vcg-a100-6c-60g-40vram",
     "vbm-112c-2048gb-8-h100-gpu", "gpu-h100x8-640gb"],
)
def test_instance_type_shapes(raw: str) -> None:
    assert looks_like_instance_type(raw)


@pytest.mark.parametrize("raw", ["H100 SXM", "NVIDIA A100-SXM4-80GB", "RTX 4090", "Nvidia Tesla A100 GPU", "l40-pcie-48gb", "A100-80GB"])
def test_gpu_names_are_not_instance_types(raw: str) -> None:
    assert not looks_like_instance_type(raw)
