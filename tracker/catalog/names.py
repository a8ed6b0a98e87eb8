"""GPU-name normalisation: a provider's GPU string (plus memory) -> a canonical GPU id, or ``None``.

Pure and table-driven; ``tracker.catalog.resolve_gpu`` wraps it (instance types and user
aliases first). The rules, in the order they are applied:

1. **Clean the string**: lower case, punctuation to spaces, glued forms split
   ("RTX6000Ada" -> "rtx 6000 ada", "RTX-PRO6000" -> "rtx pro 6000", "4070S" -> "4070 super",
   "4090D" -> "4090 d", Vast's "Q RTX 5000" -> "quadro rtx 5000", "RTXPRO6000" and "RTX 6000 Pro"
   -> "rtx pro 6000"; a known model number with its form factor, memory type or size glued on:
   "H100SXM5" -> "h100 sxm5", "H100NVL" -> "h100 nvl", "MI300X192GB" -> "mi300x 192gb",
   "GB200NVL72" -> "gb200 nvl72"; an unknown glued token such as "H100x8" stays whole), vendor words kept as noise,
   a leading count dropped ("8x H100"). Memory written in the name ("80GB", "80 GB", "80G") is read.
2. **Exactly one model family** must be named (word-bounded: "A100X", "H100x8", "L40" inside
   "L40S" do not count). Two families in one string, or none -> ``None``. Products sharing a
   model number (4070 / 4070 SUPER / 4070 Ti) are told apart by required and forbidden words.
3. **Slices and odd variants are never full GPUs**: "laptop", "mobile", "Max-Q", "MIG",
   "SFF", "vGPU", "slice", "fractional" -> ``None`` (the V100 FHHL board is its own row: "FHHL" is its form factor). Consumer models also reject the suffixes that make
   another product: "Ti", "SUPER", "D" (the RTX 4090 D is not an RTX 4090).
4. **Form factor** (SXM/HGX/DGX/SXM2..6/NVLINK, PCIe, NVL, OAM) keeps only the variants of
   that form; an "HBM3" H100 is not the PCIe card (HBM2e).
5. **Memory** (from the name and/or ``memory_gb``) keeps only variants whose VRAM is within
   -8%/+2% of it (nvidia-smi and marketplaces report a little less than the nominal size, e.g.
   Vast's A40 is 46,068 MiB = 45 GiB; the upper margin is small so that a 96 GB H100 is not
   taken for the 94 GB NVL). Conflicting memories -> ``None``.
6. **Pick**: of the variants left, a variant is eligible when the form factor was stated, or it
   is the family's documented *default*, or memory alone identifies it (``by_memory``). Exactly
   one eligible variant wins; otherwise ``None``.

Documented defaults (what a bare name means), and why:

* **H100, H200, B200 -> the SXM/HGX part.** Every recorded payload that rents a PCIe or NVL
  variant says so (RunPod "H100 PCIe", "H100 NVL", "H200 NVL", CoreWeave "H100 PCIe"), the
  public spec tables list the bare names for the SXM parts. A bare H100 with 94 GB is the NVL
  (the only 94 GB H100). The same holds for B300 (the HGX part; GB300 is its own family).
* **A100 needs its memory** (40 or 80 GB): without it -> ``None`` (OCI's "GPU - A100 - v2" is
  the 80 GB part, GCP's "Tesla A100" the 40 GB one; the name alone cannot tell). With memory
  and no form factor -> the SXM4 part of that size (reference aliases "A100 40GB", "A100 80GB";
  all four A100s have the same 312 dense TFLOPS, so this choice only moves bandwidth/TDP).
* **GH200 without memory -> GH200-96GB** (reference alias; the 144 GB part is always
  labelled 144GB/HBM3e). Its system-memory names (480GB, 576GB / 624GB) are understood.
* **No default for V100, P100, A800 and K80**: RunPod labels its V100-PCIE-16GB "Tesla V100",
  Vast's "Tesla V100"/"Tesla P100" hosts report power limits of both the SXM2 and the PCIe
  parts, A800 PCIe and SXM were both sold, and "a K80" in clouds is usually one GK210 die
  (12 GB) while the catalog row is the whole board (24 GB). These resolve only with an
  explicit form factor and the memory size (V100; P100 also came as a 12 GB PCIe card), an
  explicit form factor (A800), or the board's 24 GB (K80).
* **RTX 4060 Ti needs 16 GB** (the catalog has only the 16 GB card; the 8 GB one is common).
* **Workstation names**: "RTX A5000"/"A5000" and "RTX A4000"/"A4000" are the Ampere cards
  (Paperspace writes them without "RTX"); "RTX 4000 Ada" needs "Ada" right after the number:
  the Turing "Quadro RTX 4000" ("RTX4000") is another card and stays ``None``, and so does
  "RTX 4000 SFF Ada" (the "sff" rule). "RTX A4500", "RTX 5000 Ada" and "Quadro RTX 5000" are
  different products ("RTX-A4500", "RTX-5000-Ada", "Quadro-RTX-5000").
* **Turing Quadro RTX 4000/5000/6000** need "Quadro" (or Vast's "Q") or their own memory size
  (8/16/24 GB): a bare "RTX 6000" may be the Ada card and stays ``None``.
* **Memory tells apart cards sold under one name**: RTX 3080 10 GB / 12 GB (different core
  counts), RTX A2000 6 / 12 GB, RTX 3060 12 GB (the 8 GB card is not in the catalog), RTX 2060
  12 GB, GTX 1060 3 GB; without memory -> ``None``.
* **RTX PRO 6000 Blackwell**: one row for the Workstation and Server editions (same published
  configuration and power, same rental prices); the Max-Q edition is rejected by the "maxq" rule.
* Anything not in the catalog -> ``None``: stored unmapped with its raw name, never guessed.

Provider-specific rules (only with ``provider=``): Vultr's Cloud GPU ("vcg") A100 plans are
fractions of an 80 GB card, so a Vultr A100 with less than 80 GB is a slice -> ``None``.
Paperspace names its machines by Quadro model number without the word ("P4000", "RTX4000",
"RTX5000" are Quadro cards), and its V100 is the PCIe card (its page: "112 TeraFLOPS", the
V100 PCIe's tensor figure; the SXM2 part is 125). Scaleway's only P100 is its RENDER-S, "1x P100
PCIe3" with 16 GB (https://www.scaleway.com/en/docs/gpu/reference-content/choosing-gpu-instance-type/),
so a Scaleway P100 is the PCIe card (its memory must still say 16 GB).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

#: Memory within this band of a variant's nominal VRAM matches it.
MEMORY_LOW: Final = 0.92
MEMORY_HIGH: Final = 1.02

# Strings shaped like a cloud instance type are never read as GPU names (the instance-type
# table in tracker/catalog/data/instance_types.csv answers for them): "Standard_NC40ads_H100_v5" holds
# an H100 NVL, which a name parser would wrongly read as an SXM H100.
_INSTANCE_TYPE = re.compile(
    r"""^(?:
        standard_\w+                                   # Azure VM sizes
      | [a-z][a-z0-9-]*\d[a-z0-9-]*\.(?:\d*x?large|metal(?:-\d+xl)?|medium|small)  # AWS p4d.24xlarge
      | [a-z]\d[a-z]?-(?:high|mega|ultra|edge)gpu-\d+g # GCP a3-highgpu-8g, a4x-highgpu-4g
      | g[24]-standard-\d+                             # GCP g2-standard-8
      | (?:bm|vm)\.[a-z0-9.\-]+                        # OCI shapes BM.GPU.H100.8
      | \d+[a-z0-9]+(?:\.\d+[a-z]*)*\.\d+v             # Verda/DataCrunch 1H100.80S.30V
      | v(?:cg|bm|c2|hf|hp|oc)-[a-z0-9-]+              # Vultr plan ids
      | gpu-[a-z0-9]+x\d+-\d+gb                        # DigitalOcean gpu-h100x8-640gb
    )$""",
    re.IGNORECASE | re.VERBOSE,
)

_DISQUALIFY: Final = frozenset({"laptop", "mobile", "notebook", "maxq", "mig", "sff", "vgpu", "slice", "fractional"})


@dataclass(frozen=True, slots=True)
class Variant:
    gpu: str  #: canonical id
    form: str  #: sxm | pcie | nvl | oam | superchip (consumer and workstation cards: pcie)
    memory: tuple[float, ...]  #: nominal VRAM sizes (GB) that name this variant
    default: bool = False  #: chosen when the string states no form factor
    by_memory: tuple[float, ...] = ()  #: memory sizes that alone identify it within the family
    needs_memory: bool = False  #: never chosen without a memory figure
    also_forms: tuple[str, ...] = ()  #: other form words providers use for it


@dataclass(frozen=True, slots=True)
class Family:
    key: str
    pattern: re.Pattern[str]
    variants: tuple[Variant, ...]
    requires: frozenset[str] = frozenset()  #: tokens that must be present ("ti", "super")
    forbids: frozenset[str] = frozenset()  #: tokens that make it another product


def _f(key: str, pattern: str, *variants: Variant, requires: str = "", forbids: str = "") -> Family:
    return Family(key, re.compile(pattern), variants, frozenset(requires.split()), frozenset(forbids.split()))


def _one(gpu: str, memory: tuple[float, ...], form: str = "pcie", **kw: bool) -> Variant:
    return Variant(gpu, form, memory, default=kw.pop("default", True), **kw)


FAMILIES: Final[tuple[Family, ...]] = (
    _f("GB200", r"\bgb200\b", _one("GB200", (186, 192), "superchip")),
    _f(
        "GH200",
        r"\bgh200\b",
        Variant("GH200-96GB", "superchip", (96, 480, 576), default=True),
        Variant("GH200-144GB", "superchip", (144, 624), by_memory=(144, 624)),
    ),
    _f("GB300", r"\bgb300\b", _one("GB300", (279, 288), "superchip")),
    _f("B300", r"\bb300\b", _one("B300", (270, 288), "sxm")),
    _f("B200", r"\bb200\b", _one("B200", (180, 192), "sxm")),
    _f("B100", r"\bb100\b", _one("B100", (192,), "sxm")),
    _f(
        "H200",
        r"\bh200\b",
        Variant("H200", "sxm", (141,), default=True),
        Variant("H200-NVL", "nvl", (141,), also_forms=("pcie",)),
    ),
    _f(
        "H100",
        r"\bh100\b",
        Variant("H100-SXM", "sxm", (80,), default=True),
        Variant("H100-PCIe", "pcie", (80,)),
        Variant("H100-NVL", "nvl", (94, 96), by_memory=(94,)),  # 96 GB physical, 94 usable
    ),
    _f(
        "A100",
        r"\ba100\b",
        Variant("A100-SXM-80GB", "sxm", (80,), default=True, needs_memory=True),
        Variant("A100-SXM-40GB", "sxm", (40,), default=True, needs_memory=True),
        Variant("A100-PCIe-40GB", "pcie", (40,), needs_memory=True),
        Variant("A100-PCIe-80GB", "pcie", (80,), needs_memory=True),
    ),
    _f("A100X", r"\ba100x\b", _one("A100X", (80,))),
    _f("A800", r"\ba800\b", Variant("A800-PCIe-80GB", "pcie", (80,)), Variant("A800-SXM-80GB", "sxm", (80,))),
    _f("A40", r"\ba40\b", _one("A40", (48,))),
    _f("A30", r"\ba30\b", _one("A30", (24,))),
    _f("A10G", r"\ba10g\b", _one("A10G", (24,))),
    _f("A10", r"\ba10\b", _one("A10", (24,))),
    _f("L40S", r"\bl40s\b", _one("L40S", (48,))),
    _f("L40", r"\bl40\b", _one("L40", (48,))),
    _f("L4", r"\bl4\b", _one("L4", (24,))),
    _f("RTX-6000-Ada", r"\b6000 ada\b", _one("RTX-6000-Ada", (48,)), forbids="pro"),
    _f("RTX-A6000", r"\ba6000\b", _one("RTX-A6000", (48,)), forbids="ada pro"),
    _f("RTX-A5000", r"\ba5000\b", _one("RTX-A5000", (24,)), forbids="ada pro"),
    _f("RTX-A4000", r"\ba4000\b", _one("RTX-A4000", (16,)), forbids="ada pro"),
    # "RTX 4000 Ada" only with "ada" right after 4000: the Turing "Quadro RTX 4000" / "RTX4000"
    # is another card (8 GB); the "RTX 4000 SFF Ada" is rejected by the "sff" rule.
    _f("RTX-4000-Ada", r"\b4000 ada\b", _one("RTX-4000-Ada", (20,)), forbids="pro"),
    _f("RTX-2000-Ada", r"\b2000 ada\b", _one("RTX-2000-Ada", (16,)), forbids="pro"),
    _f("RTX-5000-Ada", r"\b5000 ada\b", _one("RTX-5000-Ada", (32,)), forbids="pro"),
    _f("RTX-A4500", r"\ba4500\b", _one("RTX-A4500", (20,)), forbids="ada pro"),
    _f(
        "RTX-A2000",
        r"\ba2000\b",
        Variant("RTX-A2000", "pcie", (6,), by_memory=(6,), needs_memory=True),
        Variant("RTX-A2000-12GB", "pcie", (12,), by_memory=(12,), needs_memory=True),
        forbids="ada pro",
    ),
    # RTX PRO 6000 Blackwell: the Workstation and Server editions share one row (same published
    # core configuration, memory and board power; they rent at the same price); the 300 W Max-Q
    # edition is another product (the "maxq" rule).
    _f("RTX-PRO-6000", r"\bpro 6000\b", _one("RTX-PRO-6000", (96,))),
    # RTX PRO 4500 Blackwell: the workstation card (200 W); its passively cooled Server Edition is
    # not in the catalog (no verified figures), so "Server Edition"/"SE" stays unmapped.
    _f("RTX-PRO-4500", r"\bpro 4500\b", _one("RTX-PRO-4500", (32,)), forbids="server se maxq"),
    # Turing Quadro RTX cards: "Quadro"/"Q" written, or the card's own memory size; "Ada"/"PRO"
    # make them other products. A bare "RTX 6000" stays None (the Ada card is also called that).
    _f("Quadro-RTX-4000", r"\brtx 4000\b", _one("Quadro-RTX-4000", (8,), default=False, by_memory=(8,), also_forms=("quadro",)), forbids="ada pro sff"),
    _f("Quadro-RTX-5000", r"\brtx 5000\b", _one("Quadro-RTX-5000", (16,), default=False, by_memory=(16,), also_forms=("quadro",)), forbids="ada pro"),
    _f("Quadro-RTX-6000", r"\brtx 6000\b", _one("Quadro-RTX-6000", (24,), default=False, by_memory=(24,), also_forms=("quadro",)), forbids="ada pro"),
    _f("Quadro-P4000", r"\bp4000\b", _one("Quadro-P4000", (8,))),
    _f("Quadro-P5000", r"\bp5000\b", _one("Quadro-P5000", (16,))),
    _f("Quadro-P6000", r"\bp6000\b", _one("Quadro-P6000", (24,))),
    _f("Quadro-M4000", r"\bm4000\b", _one("Quadro-M4000", (8,))),
    _f("Quadro-K2200", r"\bk2200\b", _one("Quadro-K2200", (4,))),
    _f("RTX-5090", r"\b5090\b", _one("RTX-5090", (32,)), forbids="d ti super"),
    _f("RTX-5080", r"\b5080\b", _one("RTX-5080", (16,)), forbids="d ti super"),
    _f("RTX-4080-SUPER", r"\b4080\b", _one("RTX-4080-SUPER", (16,)), requires="super", forbids="ti"),
    _f("RTX-4070", r"\b4070\b", _one("RTX-4070", (12,)), forbids="ti super"),
    _f("RTX-4070-SUPER", r"\b4070\b", _one("RTX-4070-SUPER", (12,)), requires="super", forbids="ti"),
    _f("RTX-4070-Ti", r"\b4070\b", _one("RTX-4070-Ti", (12,)), requires="ti", forbids="super"),
    _f("RTX-4060", r"\b4060\b", _one("RTX-4060", (8,)), forbids="ti super"),
    _f("RTX-3090-Ti", r"\b3090\b", _one("RTX-3090-Ti", (24,)), requires="ti", forbids="super"),
    _f(
        "RTX-3080",
        r"\b3080\b",
        Variant("RTX-3080", "pcie", (10,), by_memory=(10,), needs_memory=True),
        Variant("RTX-3080-12GB", "pcie", (12,), by_memory=(12,), needs_memory=True),
        forbids="ti super",
    ),
    _f("RTX-3080-Ti", r"\b3080\b", _one("RTX-3080-Ti", (12,)), requires="ti", forbids="super"),
    _f("RTX-3070", r"\b3070\b", _one("RTX-3070", (8,)), forbids="ti super"),
    _f("RTX-3070-Ti", r"\b3070\b", _one("RTX-3070-Ti", (8,)), requires="ti", forbids="super"),
    _f("RTX-3060", r"\b3060\b", _one("RTX-3060", (12,), needs_memory=True), forbids="ti super"),
    _f("RTX-3060-Ti", r"\b3060\b", _one("RTX-3060-Ti", (8,)), requires="ti", forbids="super"),
    _f("RTX-2080-Ti", r"\b2080\b", _one("RTX-2080-Ti", (11,)), requires="ti", forbids="super"),
    _f("RTX-2080-SUPER", r"\b2080\b", _one("RTX-2080-SUPER", (8,)), requires="super", forbids="ti"),
    _f("RTX-2070", r"\b2070\b", _one("RTX-2070", (8,)), forbids="ti super"),
    _f("RTX-2070-SUPER", r"\b2070\b", _one("RTX-2070-SUPER", (8,)), requires="super", forbids="ti"),
    _f("RTX-2060", r"\b2060\b", _one("RTX-2060-12GB", (12,), needs_memory=True), forbids="ti super"),
    _f("RTX-2060-SUPER", r"\b2060\b", _one("RTX-2060-SUPER", (8,)), requires="super", forbids="ti"),
    _f("GTX-1660", r"\b1660\b", _one("GTX-1660", (6,)), forbids="ti super"),
    _f("GTX-1660-SUPER", r"\b1660\b", _one("GTX-1660-SUPER", (6,)), requires="super", forbids="ti"),
    _f("GTX-1660-Ti", r"\b1660\b", _one("GTX-1660-Ti", (6,)), requires="ti", forbids="super"),
    _f("GTX-1650", r"\b1650\b", _one("GTX-1650", (4,)), forbids="ti super gddr6"),
    _f("GTX-1080", r"\b1080\b", _one("GTX-1080", (8,)), forbids="ti"),
    _f("GTX-1080-Ti", r"\b1080\b", _one("GTX-1080-Ti", (11,)), requires="ti"),
    _f("GTX-1070", r"\b1070\b", _one("GTX-1070", (8,)), forbids="ti"),
    _f("GTX-1070-Ti", r"\b1070\b", _one("GTX-1070-Ti", (8,)), requires="ti"),
    _f("GTX-1060", r"\b1060\b", _one("GTX-1060-3GB", (3,), needs_memory=True), forbids="ti"),
    _f("GTX-1050-Ti", r"\b1050\b", _one("GTX-1050-Ti", (4,)), requires="ti"),
    _f("TITAN-V", r"\btitan v\b", _one("TITAN-V", (12,))),
    _f("TITAN-Xp", r"\btitan xp\b", _one("TITAN-Xp", (12,))),
    _f("RTX-4090", r"\b4090\b", _one("RTX-4090", (24,)), forbids="d ti super"),
    _f("RTX-4080", r"\b4080\b", _one("RTX-4080", (16,)), forbids="ti super"),
    _f("RTX-4070-Ti-SUPER", r"\b4070\b", _one("RTX-4070-Ti-SUPER", (16,)), requires="ti super"),
    _f("RTX-5070-Ti", r"\b5070\b", _one("RTX-5070-Ti", (16,)), requires="ti", forbids="super"),
    _f("RTX-4060-Ti", r"\b4060\b", _one("RTX-4060-Ti-16GB", (16,), needs_memory=True), requires="ti", forbids="super"),
    _f("RTX-3090", r"\b3090\b", _one("RTX-3090", (24,)), forbids="ti super"),
    _f("T4", r"\bt4\b", _one("T4", (16,))),
    _f(
        "V100",
        r"\bv100\b",
        Variant("V100-SXM-16GB", "sxm", (16,), needs_memory=True),
        Variant("V100-SXM-32GB", "sxm", (32,), needs_memory=True),
        Variant("V100-PCIe-16GB", "pcie", (16,), needs_memory=True),
        Variant("V100-PCIe-32GB", "pcie", (32,), needs_memory=True),
        Variant("V100-FHHL-16GB", "fhhl", (16,)),
    ),
    _f("P100", r"\bp100\b", Variant("P100", "pcie", (16,), needs_memory=True)),
    _f("K80", r"\bk80\b", Variant("K80", "pcie", (24,), by_memory=(24,), needs_memory=True)),
    _f("MI355X", r"\bmi355x\b", _one("MI355X", (288,), "oam")),
    _f("MI325X", r"\bmi325x\b", _one("MI325X", (256, 288), "oam")),
    _f("MI300X", r"\bmi300x\b", _one("MI300X", (192,), "oam")),
    _f("MI250X", r"\bmi250x\b", _one("MI250X", (128,), "oam")),
    _f("Gaudi3", r"\bgaudi 3\b|\bhl 325l\b", _one("Gaudi3", (128,), "oam")),
)

#: Canonical ids the name rules can produce (the catalog test checks each exists in gpus.csv).
RESOLVABLE_IDS: Final = frozenset(v.gpu for fam in FAMILIES for v in fam.variants)

_MEMORY = re.compile(r"\b(\d+(?:\.\d+)?) ?(?:gb|gib|g)\b")


def looks_like_instance_type(raw: str) -> bool:
    """True for strings shaped like a cloud instance type / plan id (never parsed as names)."""
    return bool(_INSTANCE_TYPE.match(raw.strip()))


#: One model-number token of any family ("h100", "mi300x", "4090"): what a glued token may start with.
_MODEL_TOKEN: Final = re.compile("|".join(f"(?:{f.pattern.pattern})" for f in FAMILIES))
#: What may be glued after a model number: form factor, memory type, memory size, rack name.
_GLUED_PART: Final = re.compile(r"sxm\d?|pcie\d?|nvlink|nvl\d*|oam|hbm3e?|[1-9]\d{0,2}gb")


def _unglue(token: str) -> str:
    """``"h100sxm5"`` -> ``"h100 sxm5"``, ``"mi300x192gb"`` -> ``"mi300x 192gb"``; other tokens unchanged.

    Providers and archives write a model number with its form factor or memory glued on. Only a
    token that is a known model number followed entirely by such parts is split, so an unknown
    name ("h100x8", "a100x") is never read as a known one.
    """
    if len(token) < 4 or _MODEL_TOKEN.fullmatch(token) or not re.search(r"\d", token):
        return token
    for cut in range(len(token) - 1, 1, -1):
        head, tail = token[:cut], token[cut:]
        if not _MODEL_TOKEN.fullmatch(head):
            continue
        parts = _GLUED_PART.findall(tail)
        if "".join(parts) == tail:
            return " ".join((head, *parts))
    return token


def clean(raw: str) -> str:
    """Lower-case, punctuation-free, glued forms split: ``"NVIDIA_RTX6000Ada"`` -> ``"nvidia rtx 6000 ada"``."""
    s = raw.lower().replace("™", " ").replace("®", " ").replace("(r)", " ")
    s = re.sub(r"(?<!\d)\.|\.(?!\d)", " ", s)
    s = re.sub(r"[_\-/,()\[\]:;|+*\"']", " ", s)
    s = re.sub(r"^\s*\d+ ?x\s+", " ", s)  # "8x H100", "2x RTX A6000 48GB"
    s = re.sub(r"\brtx(?=(?:pro|a)\d)", "rtx ", s)  # "RTXPRO6000", "RTXA6000"
    s = re.sub(r"\brtx ?6000 ?pro\b", "rtx pro 6000", s)  # "RTX 6000 Pro": the Blackwell PRO card
    s = re.sub(r"\b(rtx|gtx|quadro|pro|tesla|nvidia|geforce|radeon|instinct)(?=\d)", r"\1 ", s)
    s = re.sub(r"\b(\d{4})(ada|blackwell|server|workstation)\b", r"\1 \2", s)  # "RTXPRO6000Blackwell"
    s = re.sub(r"^\s*q rtx\b", "quadro rtx", s)  # Vast "Q RTX 6000"
    s = re.sub(r"\b(\d{4}) ?s\b", r"\1 super", s)  # Vast "RTX 4070S", "GTX 1660 S"
    s = re.sub(r"\b(\d{4})(ti|d)\b", r"\1 \2", s)
    s = re.sub(r"\bgaudi ?(\d)\b", r"gaudi \1", s)
    s = " ".join(_unglue(t) for t in s.split())
    s = re.sub(r"\bmax ?q\b", "maxq", s)
    s = re.sub(r"\bpci ?e(?: ?\d)?\b|\bpci express\b", "pcie", s)
    return " ".join(s.split())


_NOISE: Final = frozenset({"nvidia", "geforce", "amd", "instinct", "intel", "tesla", "gpu", "graphics", "card"})


def alias_key(raw: str) -> str:
    """``clean(raw)`` without vendor/noise words: how user aliases are compared."""
    return " ".join(t for t in clean(raw).split() if t not in _NOISE)


def _detect_form(tokens: set[str], fam: Family) -> tuple[str | None, bool]:
    """(form, hbm3) stated in the string: sxm | pcie | nvl | oam | None."""
    forms: set[str] = set()
    if tokens & {"hgx", "dgx"} or any(re.fullmatch(r"sxm\d?", t) for t in tokens):
        forms.add("sxm")
    if "nvlink" in tokens and "nvl" not in tokens and any(v.form == "sxm" for v in fam.variants):
        forms.add("sxm")  # CoreWeave "A100 80GB NVLINK", "Tesla V100 NVLINK"; an NVL card's bridge is not SXM
    if "pcie" in tokens:
        forms.add("pcie")
    if "nvl" in tokens:
        forms.add("nvl")
    if "oam" in tokens:
        forms.add("oam")
    if "fhhl" in tokens:
        forms.add("fhhl")
    if "quadro" in tokens and any("quadro" in v.also_forms for v in fam.variants):
        forms.add("quadro")
    if len(forms) > 1:
        return "conflict", False
    return (forms.pop() if forms else None), "hbm3" in tokens


def _memory_ok(mem: float, sizes: tuple[float, ...]) -> bool:
    return any(MEMORY_LOW * s <= mem <= MEMORY_HIGH * s for s in sizes)


def match_family(cleaned: str) -> Family | None:
    tokens = set(cleaned.split())
    found = [f for f in FAMILIES if f.pattern.search(cleaned) and f.requires <= tokens and not (f.forbids & tokens)]
    # families sharing a pattern (4070 / 4070 SUPER / 4070 Ti) are one model named; a family whose
    # forbidden words are present does not count as named ("Quadro RTX 4000 Ada" names the Ada card)
    named = {f.pattern.pattern for f in FAMILIES if f.pattern.search(cleaned) and not (f.forbids & tokens)}
    if len(found) != 1 or len(named) != 1:
        return None
    return found[0]


def is_slice(raw: str) -> bool:
    """``raw`` names a slice or odd variant that is never a full GPU (a MIG profile, a vGPU, a
    laptop part): a source that files it under a GPU model is not to be believed."""
    return bool(set(clean(raw).split()) & _DISQUALIFY) if raw else False


def resolve_name(raw: str, memory_gb: float | None = None, *, provider: str | None = None) -> str | None:
    """Canonical id for a GPU *name* (not an instance type), or ``None``. See the module docstring."""
    if not raw or looks_like_instance_type(raw):
        return None
    cleaned = clean(raw)
    tokens = set(cleaned.split())
    if tokens & _DISQUALIFY:
        return None
    fam = match_family(cleaned)
    if fam is None:
        return None
    mems = [float(m) for m in _MEMORY.findall(cleaned)]
    if memory_gb is not None and memory_gb > 0:
        mems.append(float(memory_gb))
    if fam.key == "GH200" and "hbm3e" in tokens:
        mems.append(144.0)
    if provider and provider.lower() == "vultr" and fam.key == "A100" and mems and min(mems) < MEMORY_LOW * 80:
        return None  # a fractional vGPU slice of an 80 GB card
    form, hbm3 = _detect_form(tokens, fam)
    if provider and provider.lower() == "paperspace" and form is None:
        if fam.key == "V100":
            form = "pcie"  # its page: "V100 ... 112 TeraFLOPS", the V100 PCIe's tensor figure (SXM2: 125)
        elif fam.key in ("Quadro-RTX-4000", "Quadro-RTX-5000"):
            form = "quadro"  # its machine names are Quadro model numbers without the word
    if provider and provider.lower() == "scaleway" and form is None and fam.key == "P100":
        form = "pcie"  # RENDER-S, "1x P100 PCIe3" in Scaleway's GPU instance docs
    if form == "conflict":
        return None
    cands = list(fam.variants)
    if form:
        cands = [v for v in cands if form == v.form or form in v.also_forms]
    if hbm3:
        cands = [v for v in cands if v.form != "pcie"]
    if mems:
        cands = [v for v in cands if all(_memory_ok(m, v.memory) for m in mems)]
    eligible = [
        v
        for v in cands
        if (form is not None or v.default or (mems and all(_memory_ok(m, v.by_memory) for m in mems)))
        and (mems or not v.needs_memory)
    ]
    if len(eligible) != 1:
        return None
    return eligible[0].gpu
