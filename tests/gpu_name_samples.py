"""Every GPU string in the recorded provider payloads of ``../shared/provider-samples``.

``tests/fixtures/gpu_names.csv`` was built from ``sample_gpu_strings()`` (plus the
(model, memory) pairs ``scrapers/gcp.py`` extracts, and hand-judged ``expected`` ids);
``tests/test_normalise.py`` re-runs the extraction when the samples are present and fails if a
string is missing from the fixture, so the table keeps covering every recorded payload.
Each row is (provider, raw, memory_gb per GPU or None, via, note); ``via`` is ``name`` for a
GPU name and ``instance`` for an instance type / plan id.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from bs4 import BeautifulSoup

#: The shared samples beside the checkout, or wherever $PROVIDER_SAMPLES points (e.g. from a worktree).
SAMPLES = Path(os.environ.get("PROVIDER_SAMPLES") or Path(__file__).resolve().parents[2] / "shared" / "provider-samples")

Row = tuple[str, str, Any, str, str]


def sample_gpu_strings(S: Path = SAMPLES) -> list[Row]:
    out: list[Row] = []

    def add(p: str, raw: str, mem: Any = None, via: str = "name", note: str = "") -> None:
        out.append((p, raw, mem, via, note))
    # vast
    for f in sorted((S / "vastai").glob("*.json")):
        for o in json.loads(f.read_text()):
            add("vastai", o["gpu_name"], o["gpu_ram"] / 1024, note=f.name)
    # runpod graphql
    d = json.loads((S / "runpod/runpod_graphql_gpuTypes_2025-06-21.json").read_text())
    d2 = json.loads((S / "runpod/runpod_graphql_gpuTypes_envelope_2026.json").read_text())["data"]["gpuTypes"]
    for name, lst in (("runpod_graphql_gpuTypes_2025-06-21.json", d), ("runpod_graphql_gpuTypes_envelope_2026.json", d2)):
        for g in lst:
            for key in ("id", "displayName"):
                add("runpod", g[key], g["memoryInGb"] or None, note=f"{name} {key}")
    # runpod html
    soup = BeautifulSoup((S / "runpod/runpod_pricing_page_2025-09-09_excerpt.html").read_text(), "lxml")
    for r in soup.select("a.gpu-pricing-row"):
        n = r.select_one('.gpu-pricing-row__model-wrapper div[data-gradient="text-secondary"]')
        tags = [t.get_text(" ", strip=True) for t in r.select(".gpu-pricing-row__tag")]
        mem = next((float(t.split()[0]) for t in tags if "VRAM" in t), None)
        gpu_param = r.get("href").split("gpu=")[1].replace("+", " ")
        if n and n.get_text(strip=True):
            add("runpod", n.get_text(strip=True), mem, note="pricing page name")
        add("runpod", gpu_param, mem, note="pricing page ?gpu= id")
    # gcp
    for f in ("gcp/gcp_cloudbilling_skus_gpu_2025-06-17.json",):
        for s in json.loads((S / f).read_text()):
            desc = s["description"]
            if desc.startswith("Licensing Fee"):
                continue
            add("gcp", re.sub(r" running in .*$", "", desc), None, note="description, region stripped")
    for s in json.loads((S / "gcp/gcp_cloudbilling_skus_excerpt_2023-03.json").read_text())["skus"]:
        if s["category"]["resourceGroup"] == "GPU":
            add("gcp", re.sub(r" running in .*$", "", s["description"]), None, note="2023 excerpt description")
    # azure
    for i in json.loads((S / "azure/azure_retail_prices_gpu_items_projected_2026.json").read_text()):
        add("azure", i["armSkuName"], None, via="instance", note="armSkuName")
        add("azure", re.sub(r" (Spot|Low Priority)$", "", i["meterName"]), None, note="meterName")
        add("azure", re.sub(r" Windows$", "", i["productName"]), None, note="productName")
    # aws
    d = json.loads((S / "aws/aws_offer_file_ec2_us-east-1_p4d_excerpt_2024-05-28.json").read_text())
    for p in d["products"].values():
        add("aws", p["attributes"]["instanceType"], None, via="instance", note="instanceType")
    # oci
    for f in ("oci/oci_cetools_products_usd_2024-01.json", "oci/oci_cetools_products_gpu_items_2026-10-01.json"):
        for i in json.loads((S / f).read_text())["items"]:
            if "GPU" in i["displayName"]:
                add("oci", i["displayName"], None, note=f"cetools part displayName ({f.split('_')[-1][:7]})")
    # modal
    soup = BeautifulSoup((S / "modal/modal_pricing_page_rendered_2025-06-12.html").read_text(), "lxml")
    for r in soup.select("div.line-item"):
        p = r.select_one("p")
        if p and "/ sec" in r.get_text() and "GiB" not in r.get_text() and "core" not in r.get_text():
            add("modal", p.get_text(" ", strip=True), None, note="line-item name")
    # lambda
    soup = BeautifulSoup((S / "lambda/lambda_pricing_page_2026-01-09_excerpt.html").read_text(), "lxml")
    for r in soup.select("tr[data-plan]"):
        vram = r.select_one('td[data-label="VRAM/GPU"]').get_text(" ", strip=True)
        add("lambda", r.get("data-plan"), float(vram.split()[0]), note="data-plan")
    # datacrunch html
    soup = BeautifulSoup((S / "datacrunch/datacrunch_products_page_2025-08-08_excerpt.html").read_text(), "lxml")
    for r in soup.select("tr"):
        cells = [td.get_text(" ", strip=True) for td in r.select("td")]
        if cells:
            add("datacrunch", cells[1], float(cells[5]) / int(cells[2]), note="GPU model column")
            add("datacrunch", cells[0], None, via="instance", note="instance name")
    # verda handmade
    for it in json.loads((S / "datacrunch/verda_instance_types_handmade.json").read_text()):
        if not it["gpu"]["number_of_gpus"]:
            continue
        mem = it["gpu_memory"]["size_in_gigabytes"] / it["gpu"]["number_of_gpus"]
        for key in ("name", "model"):
            add("datacrunch", it[key], mem, note=f"verda handmade {key}")
        add("datacrunch", it["gpu"]["description"], mem, note="verda handmade gpu.description")
        add("datacrunch", it["instance_type"], None, via="instance", note="verda handmade instance_type")
    for loc in json.loads((S / "datacrunch/verda_instance_availabilities_spot_handmade.json").read_text()):
        for it in loc["availabilities"]:
            if not it.startswith("CPU"):
                add("datacrunch", it, None, via="instance", note="verda handmade availabilities")
    # coreweave
    soup = BeautifulSoup((S / "coreweave/coreweave_gpu_cloud_pricing_2023-09-21_excerpt.html").read_text(), "lxml")
    for r in soup.select("div.table-body-row"):
        a = r.select_one("a[data-product]")
        parts = r.get_text(" | ", strip=True).split(" | ")
        mem = float(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
        add("coreweave", a.get_text(" ", strip=True), mem, note="a[data-product]")
    # nebius
    soup = BeautifulSoup((S / "nebius/nebius_prices_page_2026-07-12_excerpt.html").read_text(), "lxml")
    for r in soup.select(".pc-highlight-table-block__row")[1:]:
        add("nebius", r.select(".pc-highlight-table-block__cell")[0].get_text(" ", strip=True), None, note="Item cell")
    # crusoe
    soup = BeautifulSoup((S / "crusoe/crusoe_cloud_pricing_page_2025-12-15_excerpt.html").read_text(), "lxml")
    for h in soup.select("h4"):
        item = h.find_parent("div", class_="prixing-item") or h.parent
        txt = item.get_text(" | ", strip=True).split(" | ") if item else []
        mem = next((float(t[:-2]) for t in txt if re.fullmatch(r"\d+GB", t)), None)
        add("crusoe", h.get_text(" ", strip=True), mem, note="h4 heading + VRAM tag")
    # paperspace
    soup = BeautifulSoup((S / "paperspace/paperspace_pricing_page_2024-01-23_excerpt.html").read_text(), "lxml")
    for h in soup.select("h1.instance-names"):
        add("paperspace", h.get_text(" ", strip=True), None, note="h1.instance-names")
    for li in soup.select("li"):
        t = li.get_text(" ", strip=True)
        if t.endswith(" GPU") and t.startswith("NVIDIA"):
            add("paperspace", t, None, note="spec list GPU line")
    # vultr
    for p in json.loads((S / "vultr/vultr_plans_handmade.json").read_text())["plans"]:
        add("vultr", p["gpu_type"], p["gpu_vram_gb"], note="gpu_type + gpu_vram_gb (handmade)")
        add("vultr", p["id"], None, via="instance", note="plan id (handmade)")
    for p in json.loads((S / "vultr/vultr_plans-metal_handmade.json").read_text())["plans_metal"]:
        add("vultr", p["id"], None, via="instance", note="metal plan id (handmade)")
    # digitalocean
    for s in json.loads((S / "digitalocean/digitalocean_v2_sizes_handmade.json").read_text())["sizes"]:
        if "gpu_info" in s:
            gi = s["gpu_info"]
            add("digitalocean", gi["model"], gi["vram"]["amount"] / gi["count"], note="gpu_info.model (handmade)")
            add("digitalocean", s["description"], gi["vram"]["amount"] / gi["count"], note="description (handmade)")
            add("digitalocean", s["slug"], None, via="instance", note="slug (handmade)")
    # jarvislabs
    for m in json.loads((S / "jarvislabs/jarvislabs_misc_server_meta_handmade.json").read_text())["server_meta"]:
        add("jarvislabs", m["gpu_type"], float(m["vram"]), note="gpu_type + vram (handmade)")
    # cudo
    for m in json.loads((S / "cudo/cudo_machine_types_handmade.json").read_text()):
        add("cudo", m["gpuModel"], None, note="gpuModel (handmade)")
        add("cudo", m["gpuModelId"], None, note="gpuModelId (handmade)")
    # tensordock
    d = json.loads((S / "tensordock/tensordock_hostnode_specs_handmade.json").read_text())
    for k, v in d["gpu"].items():
        add("tensordock", k, float(v["vram"]), note="gpu key + vram (handmade)")
    # dedupe preserving order
    seen: set[tuple[str, str, Any, str]] = set()
    uniq: list[Row] = []
    for r in out:
        mem = None if r[2] is None else round(float(r[2]), 4)
        key = (r[0], r[1], mem, r[3])
        if key in seen:
            continue
        seen.add(key)
        uniq.append((r[0], r[1], mem, r[3], r[4]))
    return uniq
