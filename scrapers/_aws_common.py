"""What the AWS on-demand and spot scrapers share: regions, their price-list names, GPU look-up.

Regions. AWS's price lists name a region two ways: the code (``us-east-1``, used by the spot
feed and the offer files' ``regionCode``) and a display name (``US East (N. Virginia)``, the
``location`` of the EC2 Price List and the key of the light pricing JSON). ``REGIONS`` maps one to
the other. Source of the names: AWS's public locations list behind its pricing pages,
https://b0.p.awsstatic.com/locations/1.0/aws/current/locations.json, which spells them as the
EC2 Price List's ``location`` attribute does. The names marked ``recorded`` were seen in real AWS price lists: 2026-09-28 (pricing JSON of 7
locations) and 2024-11-14 (EU (Stockholm)). A name AWS spells differently only costs that region:
its pricing JSON answers 404, which the scraper logs as "no listing there".

GPUs. The payloads never name a GPU model: an instance type is mapped to (GPU, count) through the
catalog's instance-type table (one public source per row). Trainium and Inferentia instances
(``trn1``, ``trn1n``, ``trn2``, ``inf1``, ``inf2``) and the other non-GPU accelerators AWS files
next to GPUs (Gaudi ``dl1``, Qualcomm ``dl2q``, FPGA ``f1``/``f2``, Xilinx ``vt1``) are skipped on
purpose: they are not GPUs, the catalog has no spec rows for them, and counting their chips as
"GPUs" (an offer file's ``gpu`` attribute made trn1.32xlarge 16 unmapped GPUs) would put them in
GPU price comparisons. The spot feed files Trainium and Inferentia under ``gpuCurrentGen``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from tracker.catalog.instance_types import instance_gpu


@dataclass(frozen=True, slots=True)
class Region:
    code: str
    location: str
    country: str
    #: The location name was seen in a recorded AWS price list (not only in the locations list).
    recorded: bool = False
    #: Sold to everyone (False for GovCloud, which needs a separate account).
    public: bool = True


REGIONS: Final[Mapping[str, Region]] = {
    r.code: r
    for r in (
        Region("us-east-1", "US East (N. Virginia)", "US", recorded=True),
        Region("us-east-2", "US East (Ohio)", "US", recorded=True),
        Region("us-west-1", "US West (N. California)", "US"),
        Region("us-west-2", "US West (Oregon)", "US", recorded=True),
        Region("ca-central-1", "Canada (Central)", "CA"),
        Region("ca-west-1", "Canada West (Calgary)", "CA"),
        Region("mx-central-1", "Mexico (Central)", "MX"),
        Region("sa-east-1", "South America (Sao Paulo)", "BR", recorded=True),
        Region("eu-west-1", "EU (Ireland)", "IE"),
        Region("eu-west-2", "EU (London)", "GB"),
        Region("eu-west-3", "EU (Paris)", "FR"),
        Region("eu-central-1", "EU (Frankfurt)", "DE"),
        Region("eu-central-2", "EU (Zurich)", "CH"),
        Region("eu-north-1", "EU (Stockholm)", "SE", recorded=True),
        Region("eu-south-1", "EU (Milan)", "IT"),
        Region("eu-south-2", "EU (Spain)", "ES"),
        Region("il-central-1", "Israel (Tel Aviv)", "IL"),
        Region("me-south-1", "Middle East (Bahrain)", "BH"),
        Region("me-central-1", "Middle East (UAE)", "AE"),
        Region("af-south-1", "Africa (Cape Town)", "ZA"),
        Region("ap-east-1", "Asia Pacific (Hong Kong)", "HK"),
        Region("ap-south-1", "Asia Pacific (Mumbai)", "IN", recorded=True),
        Region("ap-south-2", "Asia Pacific (Hyderabad)", "IN"),
        Region("ap-northeast-1", "Asia Pacific (Tokyo)", "JP", recorded=True),
        Region("ap-northeast-2", "Asia Pacific (Seoul)", "KR"),
        Region("ap-northeast-3", "Asia Pacific (Osaka)", "JP"),
        Region("ap-southeast-1", "Asia Pacific (Singapore)", "SG"),
        Region("ap-southeast-2", "Asia Pacific (Sydney)", "AU", recorded=True),
        Region("ap-southeast-3", "Asia Pacific (Jakarta)", "ID"),
        Region("ap-southeast-4", "Asia Pacific (Melbourne)", "AU"),
        Region("ap-southeast-5", "Asia Pacific (Malaysia)", "MY"),
        Region("ap-southeast-7", "Asia Pacific (Thailand)", "TH"),
        Region("us-gov-west-1", "AWS GovCloud (US-West)", "US", public=False),
        Region("us-gov-east-1", "AWS GovCloud (US-East)", "US", public=False),
    )
}
REGION_BY_LOCATION: Final[Mapping[str, Region]] = {r.location: r for r in REGIONS.values()}
REGION_CODE: Final = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-\d$")
#: ``$AWS_PRICING_REGIONS``: a comma- or space-separated list of region codes for both AWS scrapers.
REGIONS_ENV: Final = "AWS_PRICING_REGIONS"

#: Instance families that are accelerators but not GPUs (see the module docstring).
NOT_GPU_FAMILIES: Final = frozenset({"trn1", "trn1n", "trn2", "trn2u", "inf1", "inf2", "dl1", "dl2q", "f1", "f2", "vt1"})


def country_of(region: str) -> str | None:
    r = REGIONS.get(region)
    return r.country if r else None


def family_of(instance_type: str) -> str:
    """``p5.48xlarge`` -> ``p5``; ``p6-b200.48xlarge`` -> ``p6-b200``."""
    return instance_type.split(".", 1)[0].lower()


def is_not_gpu(instance_type: str) -> bool:
    """A Trainium, Inferentia or other non-GPU accelerator instance (skipped, not an offer)."""
    return family_of(instance_type) in NOT_GPU_FAMILIES


def gpu_of(instance_type: str) -> tuple[str, float] | None:
    """(canonical GPU id, count) from the catalog's instance-type table, or None."""
    if is_not_gpu(instance_type):
        return None
    return instance_gpu(instance_type, "aws")


def split_regions(value: str) -> list[str]:
    return [r for r in re.split(r"[\s,]+", value) if r]

