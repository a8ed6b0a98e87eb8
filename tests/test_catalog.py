"""The GPU catalog (tracker/catalog/data/gpus.csv) against the reference spec table, plus its API.

``tests/fixtures/gpu-specs-reference.csv`` is a copy of ``../shared/gpu-specs-reference.csv``
(43 rows); when the shared original is present the copy must still equal it.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from db.models import GpuModel
from tests.conftest import fixture_path
from tracker.catalog.instance_types import instance_gpu, instance_types
from tracker.catalog.names import MEMORY_HIGH, MEMORY_LOW, RESOLVABLE_IDS
from tracker.catalog.specs import (
    DB_FIELDS,
    GpuSpec,
    catalog_rows_for_db,
    family_of,
    gpu_ids_matching,
    load_catalog,
    resolve_gpu,
)
from tracker.errors import ConfigError

REFERENCE = fixture_path("gpu-specs-reference.csv")
SHARED_REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "gpu-specs-reference.csv"

#: The canonical ids of the brief, one per reference row.
REFERENCE_IDS = {
    "B200 (HGX/DGX B200, SXM, 1000 W)": "B200",
    "B200 in GB200 NVL72 (per GPU, up to 1200 W)": "GB200",
    "B100 (HGX B100, SXM, 700 W)": "B100",
    "H200 SXM (141GB)": "H200",
    "H200 NVL (141GB, PCIe)": "H200-NVL",
    "H100 SXM (80GB)": "H100-SXM",
    "H100 PCIe (80GB)": "H100-PCIe",
    "H100 NVL (94GB, PCIe, per GPU)": "H100-NVL",
    "GH200 Grace Hopper Superchip (96GB HBM3 GPU)": "GH200-96GB",
    "GH200 Grace Hopper Superchip (144GB HBM3e GPU)": "GH200-144GB",
    "A100 SXM4 80GB": "A100-SXM-80GB",
    "A100 SXM4 40GB": "A100-SXM-40GB",
    "A100 PCIe 40GB": "A100-PCIe-40GB",
    "A100 PCIe 80GB": "A100-PCIe-80GB",
    "A800 80GB PCIe": "A800-PCIe-80GB",
    "A800 SXM4 80GB": "A800-SXM-80GB",
    "A40": "A40",
    "A10 (24GB PCIe)": "A10",
    "A10G (AWS G5)": "A10G",
    "L40S": "L40S",
    "L40": "L40",
    "L4": "L4",
    "RTX 6000 Ada Generation": "RTX-6000-Ada",
    "RTX A6000": "RTX-A6000",
    "GeForce RTX 5090": "RTX-5090",
    "GeForce RTX 4090": "RTX-4090",
    "GeForce RTX 4080 (16GB)": "RTX-4080",
    "GeForce RTX 4070 Ti SUPER": "RTX-4070-Ti-SUPER",
    "GeForce RTX 5070 Ti": "RTX-5070-Ti",
    "GeForce RTX 4060 Ti 16GB": "RTX-4060-Ti-16GB",
    "GeForce RTX 3090": "RTX-3090",
    "T4": "T4",
    "V100 SXM2 16GB": "V100-SXM-16GB",
    "V100 SXM2 32GB": "V100-SXM-32GB",
    "V100 PCIe 16GB": "V100-PCIe-16GB",
    "V100 PCIe 32GB": "V100-PCIe-32GB",
    "P100 PCIe 16GB": "P100",
    "Tesla K80 (full board, 2x GK210)": "K80",
    "Instinct MI355X": "MI355X",
    "Instinct MI325X": "MI325X",
    "Instinct MI300X": "MI300X",
    "Instinct MI250X": "MI250X",
    "Gaudi 3 (HL-325L OAM)": "Gaudi3",
}

#: catalog field -> reference column, compared value for value.
COLUMNS = {
    "vendor": "vendor",
    "vram_gb": "vram_gb",
    "mem_bandwidth_gbps": "mem_bandwidth_gbps",
    "fp32_tflops": "fp32_tflops",
    "tf32_dense_tflops": "tf32_tensor_tflops_dense",
    "fp16_dense_tflops": "fp16_bf16_tensor_tflops_dense",
    "fp16_sparse_tflops": "fp16_tensor_tflops_sparse",
    "fp16_dense_fp16acc_tflops": "fp16_tensor_tflops_dense_fp16acc",
    "fp16_sparse_fp16acc_tflops": "fp16_tensor_tflops_sparse_fp16acc",
    "fp8_dense_tflops": "fp8_tflops_dense",
    "int8_dense_tops": "int8_tops_dense",
    "tdp_w": "tdp_w",
    "launch_year": "launch_year",
    "architecture": "architecture",
    "name": "canonical_name",
}

#: Deliberate differences from the reference, (id, field) -> why. Every other reference value
#: is carried over exactly; where the reference has a launch MSRP it is the purchase price.
DELIBERATE_DIFFERENCES: dict[tuple[str, str], str] = {}

#: Purchase prices with a public, dated street-price citation (NVIDIA publishes no list price).
STREET_PRICES = {"H100-SXM": 30_000, "H200": 35_000, "B200": 40_000}

#: Words that name how the catalog was built rather than where a figure comes from.
PRIVATE_WORDS = re.compile(r"(?<!-)\bissues?\b|/work/|shared/|seed article|gpu-specs-reference|work item|helper", re.IGNORECASE)

#: The fixed form every row's notes end with: the date its sources were read.
SOURCES_DATE = re.compile(r"Sources as of (\d{4}-\d{2}-\d{2})\.$")

FORM_FACTORS = {"SXM", "PCIe", "NVL", "OAM", "consumer", "superchip"}


def reference_rows() -> list[dict[str, str]]:
    with REFERENCE.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def number(text: str) -> float | None:
    return float(text) if text.strip() else None


def ref_value(field: str, text: str) -> object:
    if field in ("vendor", "architecture", "name"):
        return text.strip()
    if field == "launch_year":
        return int(text) if text.strip() else None
    return number(text)


@pytest.fixture(scope="module")
def catalog() -> dict[str, GpuSpec]:
    return load_catalog()


def test_the_fixture_copy_matches_the_shared_reference() -> None:
    if not SHARED_REFERENCE.exists():
        pytest.skip("../shared/gpu-specs-reference.csv is not beside this checkout")
    assert REFERENCE.read_bytes() == SHARED_REFERENCE.read_bytes()


def test_every_reference_row_is_in_the_catalog_under_its_canonical_id(catalog: dict[str, GpuSpec]) -> None:
    rows = reference_rows()
    assert len(rows) == 43
    assert {r["canonical_name"] for r in rows} == set(REFERENCE_IDS)
    assert set(REFERENCE_IDS.values()) <= set(catalog)


@pytest.mark.parametrize("row", reference_rows(), ids=lambda r: REFERENCE_IDS[r["canonical_name"]])
def test_catalog_figures_match_the_reference(row: dict[str, str], catalog: dict[str, GpuSpec]) -> None:
    spec = catalog[REFERENCE_IDS[row["canonical_name"]]]
    for field, column in COLUMNS.items():
        if (spec.id, field) in DELIBERATE_DIFFERENCES:
            continue
        assert getattr(spec, field) == ref_value(field, row[column]), f"{spec.id}.{field}"
    assert spec.source_urls == row["source_urls"].split(), spec.id
    msrp = number(row["launch_msrp_usd"])
    if msrp is not None and (spec.id, "purchase_price_usd") not in DELIBERATE_DIFFERENCES:
        assert spec.purchase_price_usd == msrp, spec.id


def test_deliberate_differences_are_real_differences(catalog: dict[str, GpuSpec]) -> None:
    by_id = {REFERENCE_IDS[r["canonical_name"]]: r for r in reference_rows()}
    for (gpu, field), reason in DELIBERATE_DIFFERENCES.items():
        assert reason
        if field == "purchase_price_usd":
            ref = number(by_id[gpu]["launch_msrp_usd"])
        else:
            ref = ref_value(field, by_id[gpu][COLUMNS[field]])
        assert getattr(catalog[gpu], field) != ref, (gpu, field)


def test_every_row_has_sources(catalog: dict[str, GpuSpec]) -> None:
    for spec in catalog.values():
        assert spec.source_urls, spec.id
        assert all(u.startswith(("https://", "http://")) for u in spec.source_urls), spec.id


def test_purchase_prices_have_a_date_and_a_public_citation(catalog: dict[str, GpuSpec]) -> None:
    priced = [s for s in catalog.values() if s.purchase_price_usd is not None]
    assert len(priced) >= 8
    for spec in priced:
        assert spec.purchase_price_usd > 0, spec.id
        assert spec.purchase_price_date and re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", spec.purchase_price_date), spec.id
        source = spec.purchase_price_source or ""
        assert re.search(r"https?://\S+", source), (spec.id, source)
        assert re.search(r"\(read \d{4}-\d{2}-\d{2}\)$", source), (spec.id, source)
    for spec in catalog.values():
        if spec.purchase_price_usd is None:
            assert spec.purchase_price_date is None and spec.purchase_price_source is None, spec.id


@pytest.mark.parametrize(("gpu", "usd"), STREET_PRICES.items())
def test_street_prices_cite_a_public_page(gpu: str, usd: int, catalog: dict[str, GpuSpec]) -> None:
    spec = catalog[gpu]
    assert spec.purchase_price_usd == usd
    assert "https://www.aiinframap.com/" in (spec.purchase_price_source or "")


def test_unsourced_purchase_prices_are_dropped_and_said_so(catalog: dict[str, GpuSpec]) -> None:
    for gpu in ("A100-SXM-80GB", "L40S"):
        assert catalog[gpu].purchase_price_usd is None
        assert "no public, dated price citation" in catalog[gpu].notes


def test_catalog_text_is_public_citations_only(catalog: dict[str, GpuSpec]) -> None:
    for spec in catalog.values():
        for field in ("name", "notes", "sources", "purchase_price_source", "architecture"):
            text = getattr(spec, field) or ""
            assert not PRIVATE_WORDS.search(text), (spec.id, field, PRIVATE_WORDS.search(text))
    for row in instance_types():
        assert not PRIVATE_WORDS.search(row.source), row


def test_every_row_says_when_its_sources_were_read(catalog: dict[str, GpuSpec]) -> None:
    for spec in catalog.values():
        m = SOURCES_DATE.search(spec.notes)
        assert m, spec.id
        assert "2026-01-01" <= m.group(1) <= "2026-12-31", spec.id


def test_the_catalog_names_every_recorded_gpu_family(catalog: dict[str, GpuSpec]) -> None:
    # cards the recordings rent, each its own row (never merged into a neighbour)
    for gpu in ("RTX-3080", "RTX-3080-12GB", "RTX-3080-Ti", "RTX-4070", "RTX-4070-SUPER", "RTX-4070-Ti",
                "Quadro-RTX-6000", "RTX-6000-Ada", "RTX-PRO-6000", "B300", "GB300", "RTX-A4500", "RTX-5000-Ada"):
        assert gpu in catalog, gpu
    assert catalog["Quadro-RTX-6000"].vram_gb == 24 and catalog["RTX-6000-Ada"].vram_gb == 48
    assert catalog["B300"].family != catalog["GB300"].family != "B200"


def test_rows_are_well_formed(catalog: dict[str, GpuSpec]) -> None:
    for spec in catalog.values():
        assert spec.form_factor in FORM_FACTORS, spec.id
        assert spec.vendor in {"NVIDIA", "AMD", "Intel"}, spec.id
        assert spec.vram_gb and spec.launch_year, spec.id  # tdp_w may be empty (A10G: not verified)
        if spec.fp16_dense_tflops and spec.fp16_sparse_tflops:
            assert 1.98 <= spec.fp16_sparse_tflops / spec.fp16_dense_tflops <= 2.03, spec.id
        if spec.fp16_dense_tflops and spec.fp16_dense_fp16acc_tflops:
            assert spec.fp16_dense_fp16acc_tflops >= spec.fp16_dense_tflops, spec.id
        if spec.form_factor == "consumer" and spec.fp16_dense_tflops:
            assert spec.fp16_dense_fp16acc_tflops == pytest.approx(2 * spec.fp16_dense_tflops, rel=0.01), spec.id


def test_rows_load_into_the_gpu_model_table(catalog: dict[str, GpuSpec]) -> None:
    rows = catalog_rows_for_db()
    assert len(rows) == len(catalog) >= 43
    assert set(rows[0]) == set(GpuModel.model_fields) == set(DB_FIELDS)
    models = [GpuModel(**r) for r in rows]
    assert {m.id for m in models} == set(catalog)


def test_json_shape_has_the_keys_the_cli_promises(catalog: dict[str, GpuSpec]) -> None:
    doc = catalog["H100-SXM"].as_json()
    for key in ("gpu", "vendor", "vram_gb", "tdp_w", "fp16_dense_tflops", "fp16_sparse_tflops", "fp8_dense_tflops", "purchase_price_usd", "sources"):
        assert key in doc
    assert doc["gpu"] == "H100-SXM" and isinstance(doc["sources"], list) and doc["sources"]


def test_families() -> None:
    assert gpu_ids_matching("H100") == ["H100-SXM", "H100-PCIe", "H100-NVL"]
    assert gpu_ids_matching("h100") == ["H100-SXM", "H100-PCIe", "H100-NVL"]
    assert sorted(gpu_ids_matching("A100")) == ["A100-PCIe-40GB", "A100-PCIe-80GB", "A100-SXM-40GB", "A100-SXM-80GB"]
    assert sorted(gpu_ids_matching("V100")) == ["V100-FHHL-16GB", "V100-PCIe-16GB", "V100-PCIe-32GB", "V100-SXM-16GB", "V100-SXM-32GB"]
    assert gpu_ids_matching("GH200") == ["GH200-96GB", "GH200-144GB"]
    # an exact id is just itself; "H200*" is the prefix form for H200 and H200-NVL
    assert gpu_ids_matching("H200") == ["H200"]
    assert gpu_ids_matching("H200*") == ["H200", "H200-NVL"]
    assert gpu_ids_matching("h100-pcie") == ["H100-PCIe"]
    assert gpu_ids_matching("B200") == ["B200"]  # GB200 is its own family
    assert gpu_ids_matching("RTX 4090") == ["RTX-4090"]  # a provider-style name resolves
    assert gpu_ids_matching("A30") == ["A30"]
    assert gpu_ids_matching("RTX A5000") == ["RTX-A5000"]
    assert gpu_ids_matching("RTX A4500") == ["RTX-A4500"]
    assert gpu_ids_matching("RTX A7000") == []  # not in the catalog
    assert gpu_ids_matching("") == []
    assert family_of("H100-NVL") == "H100"
    assert family_of("GH200-144GB") == "GH200"
    assert family_of("GB200") == "GB200"
    assert family_of("H200-NVL") == "H200"
    assert family_of("not-a-gpu") == "not-a-gpu"
    for gpu in ("GH200-96GB", "GH200-144GB", "GB200"):
        assert gpu not in gpu_ids_matching("H100") + gpu_ids_matching("H200") + gpu_ids_matching("B200")


def test_every_id_the_name_rules_produce_is_in_the_catalog(catalog: dict[str, GpuSpec]) -> None:
    assert RESOLVABLE_IDS <= set(catalog)


# --- user overrides -------------------------------------------------------------------------


def test_user_file_overrides_a_price_and_adds_a_gpu(tmp_path: Path) -> None:
    path = tmp_path / "my-gpus.toml"
    path.write_text(
        """
[gpus.H100-SXM]
purchase_price_usd = 27500
purchase_price_date = "2025-02-01"

[gpus.RTX-PRO-4000]
vendor = "NVIDIA"
vram_gb = 24
fp16_dense_tflops = 10.0
launch_year = 2025
sources = ["https://example.org/rtx-pro-4000-datasheet"]
aliases = ["RTX PRO 4000 Blackwell", "RTX PRO 4000"]
"""
    )
    cat = load_catalog(path)
    h100 = cat["H100-SXM"]
    assert h100.purchase_price_usd == 27500
    assert h100.purchase_price_date == "2025-02-01"
    assert h100.purchase_price_source == f"user catalog {path}"
    assert h100.fp16_dense_tflops == 989.4  # untouched fields stay
    new = cat["RTX-PRO-4000"]
    assert (new.family, new.vram_gb, new.fp16_dense_tflops, new.launch_year) == ("RTX-PRO-4000", 24.0, 10.0, 2025)
    assert new.source_urls == ["https://example.org/rtx-pro-4000-datasheet"]
    assert resolve_gpu("NVIDIA RTX PRO 4000 Blackwell", 24, catalog=cat) == "RTX-PRO-4000"
    assert resolve_gpu("RTX PRO 4000", 48, catalog=cat) is None  # memory contradicts the spec
    assert resolve_gpu("RTX PRO 4000 Blackwell") is None  # the shipped catalog does not know it
    assert gpu_ids_matching("rtx-pro-4000", catalog=cat) == ["RTX-PRO-4000"]
    assert GpuModel(**next(r for r in catalog_rows_for_db(cat) if r["id"] == "RTX-PRO-4000"))
    # the shipped catalog is not changed by loading an override
    assert load_catalog()["H100-SXM"].purchase_price_usd == 30000
    assert "RTX-PRO-4000" not in load_catalog()


def test_a_new_gpu_without_sources_is_sourced_as_the_user_file(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[gpus.MY-GPU]\nfp16_dense_tflops = 10\n')
    spec = load_catalog(path)["MY-GPU"]
    assert spec.sources == f"user catalog {path}"
    assert spec.family == "MY-GPU"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[gpus.H100-SXM]\npurchase_price = 1\n", "gpus.H100-SXM: unknown field(s) purchase_price"),
        ('[gpus.H100-SXM]\nvram_gb = "eighty"\n', "gpus.H100-SXM.vram_gb: 'eighty' is not a number"),
        ("[gpus.H100-SXM]\nlaunch_year = 2022.5\n", "gpus.H100-SXM.launch_year: 2022.5 is not an integer"),
        ("[gpus.H100-SXM]\nvram_gb = true\n", "is not a number"),
        ("[gpus.H100-SXM]\nsources = 3\n", "is not a string or a list of strings"),
        ("[gpu.H100-SXM]\nvram_gb = 1\n", "unknown top-level key(s) gpu"),
        ("gpus = 3\n", "'gpus' must be a table"),
        ("[gpus]\nH100-SXM = 3\n", "gpus.H100-SXM must be a table"),
        ("[gpus.H100-SXM\n", "is not valid TOML"),
    ],
)
def test_bad_user_files_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_catalog(path)


def test_a_missing_user_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_catalog(tmp_path / "nope.toml")


# --- instance-type table --------------------------------------------------------------------


def test_instance_type_rows_are_valid(catalog: dict[str, GpuSpec]) -> None:
    rows = instance_types()
    assert rows
    for r in rows:
        where = f"{r.provider},{r.instance_type}"
        assert r.gpu in catalog, where
        assert r.gpu_count > 0, where
        assert r.source.startswith("https://"), where
        vram = catalog[r.gpu].vram_gb
        if r.gpu_memory_gb is not None and vram:
            assert MEMORY_LOW * vram <= r.gpu_memory_gb <= MEMORY_HIGH * vram, where


def test_instance_type_file_has_no_conflicting_duplicates() -> None:
    path = Path(__file__).resolve().parents[1] / "tracker" / "catalog" / "data" / "instance_types.csv"
    seen: dict[tuple[str, str], tuple[str, str]] = {}
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == ["provider", "instance_type", "gpu", "gpu_count", "gpu_memory_gb", "source"]
        for row in reader:
            key = (row["provider"].strip().lower(), row["instance_type"].strip().lower())
            value = (row["gpu"].strip(), row["gpu_count"].strip())
            assert seen.setdefault(key, value) == value, key


@pytest.mark.parametrize(
    ("instance_type", "expected"),
    [
        ("a3-highgpu-8g", ("H100-SXM", 8)),
        ("a3-highgpu-1g", ("H100-SXM", 1)),
        ("A3-MEGAGPU-8G", ("H100-SXM", 8)),
        ("a3-ultragpu-8g", ("H200", 8)),
        ("a4-highgpu-8g", ("B200", 8)),
        ("a4x-highgpu-4g", ("GB200", 4)),
        ("a2-highgpu-1g", ("A100-SXM-40GB", 1)),
        ("a2-megagpu-16g", ("A100-SXM-40GB", 16)),
        ("a2-ultragpu-8g", ("A100-SXM-80GB", 8)),
        ("g2-standard-4", ("L4", 1)),
        ("g2-standard-24", ("L4", 2)),
        ("g2-standard-96", ("L4", 8)),
    ],
)
def test_gcp_instance_types(instance_type: str, expected: tuple[str, int]) -> None:
    assert instance_gpu(instance_type, "gcp") == expected
    assert instance_gpu(instance_type) == expected  # unique across providers
    assert resolve_gpu(instance_type) == expected[0]


def test_instance_gpu_is_scoped_by_provider() -> None:
    assert instance_gpu("a3-highgpu-8g", "aws") is None
    assert instance_gpu("no-such-type") is None


def test_geforce_tensor_figures_come_from_the_whitepapers_or_their_per_sm_rate(catalog: dict[str, GpuSpec]) -> None:
    consumer = [s for s in catalog.values() if s.form_factor == "consumer" and s.fp16_dense_fp16acc_tflops]
    assert len(consumer) >= 20
    for spec in consumer:
        notes = spec.notes.lower()
        assert "whitepaper" in notes or re.search(r"\d+ sms x 1,?024", notes), spec.id
    # the per-SM rule reproduces the whitepapers' own tables (68 SMs x 1,024 x 1.545 GHz = 107.6)
    assert catalog["RTX-2080-Ti"].fp16_dense_fp16acc_tflops == 107.6
    assert catalog["RTX-3080"].fp16_dense_tflops == 59.5 and catalog["RTX-3070"].fp16_dense_fp16acc_tflops == 81.3
    # cards without tensor cores have no tensor figures
    for gpu in ("GTX-1080-Ti", "GTX-1660-SUPER", "Quadro-P6000", "TITAN-Xp"):
        assert catalog[gpu].fp16_dense_tflops is None and catalog[gpu].fp16_dense_fp16acc_tflops is None, gpu
