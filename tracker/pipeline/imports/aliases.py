"""The one table that maps other trackers' provider names onto this project's.

An archive names providers its own way (the tugot17 aggregator writes ``lambdalabs``,
ewyluda writes ``vast`` and splits RunPod into two clouds). A name listed here is stored
under the project's provider, so imported history and live scrapes meet; a name that is
neither listed nor a registered scraper is stored under its own (lower-cased) name as an
*external* provider: `gpu-tracker providers` and ``/api/providers`` list it as such.

| archive name | stored as | why |
|---|---|---|
| ``lambdalabs`` | ``lambda`` | Lambda's old domain and API name |
| ``lambda labs``, ``lambda cloud`` | ``lambda`` | display spellings |
| ``vast``, ``vast.ai`` | ``vastai`` | Vast.ai |
| ``runpod secure cloud``, ``runpod community cloud`` | ``runpod`` | one provider, two clouds (the kind tells them apart) |
| ``coreweave cloud`` | ``coreweave`` | display spelling |
| ``google``, ``google cloud``, ``gcp compute`` | ``gcp`` | Google Cloud |
| ``amazon``, ``amazon web services``, ``ec2`` | ``aws`` | AWS |
| ``microsoft azure`` | ``azure`` | Azure |
| ``oracle``, ``oracle cloud`` | ``oci`` | Oracle Cloud |
| ``datacrunch.io`` | ``datacrunch`` | DataCrunch pricing page |
| ``paperspace by digitalocean`` | ``paperspace`` | Paperspace |
| ``akamai``, ``akamai cloud`` | ``linode`` | Akamai Cloud (Linode) |
| ``voltage park``, ``voltage-park`` | ``voltagepark`` | Voltage Park |
| ``jarvis labs`` | ``jarvislabs`` | JarvisLabs |
| ``cudo compute`` | ``cudo`` | Cudo Compute |
"""

from __future__ import annotations

import re

from db import reads
from db.reader import Reader

#: A plain provider name: letters, digits and ``_ . -`` (single spaces inside), starting with a
#: letter or digit, at most 64 characters. Anything else (``=HYPERLINK(...)``, control characters,
#: a path) is refused: the name is stored, listed and written into every export.
PLAIN_NAME = re.compile(r"[a-z0-9](?:[a-z0-9_.\-]| (?! ))*")
MAX_NAME = 64

ALIASES: dict[str, str] = {
    "lambdalabs": "lambda", "lambda labs": "lambda", "lambda cloud": "lambda",
    "vast": "vastai", "vast.ai": "vastai",
    "runpod secure cloud": "runpod", "runpod community cloud": "runpod",
    "coreweave cloud": "coreweave",
    "google": "gcp", "google cloud": "gcp", "gcp compute": "gcp",
    "amazon": "aws", "amazon web services": "aws", "ec2": "aws",
    "microsoft azure": "azure",
    "oracle": "oci", "oracle cloud": "oci",
    "datacrunch.io": "datacrunch",
    "paperspace by digitalocean": "paperspace",
    "akamai": "linode", "akamai cloud": "linode",
    "voltage park": "voltagepark", "voltage-park": "voltagepark",
    "jarvis labs": "jarvislabs",
    "cudo compute": "cudo",
}


def plain_name(raw: str, what: str = "provider name") -> str:
    """``raw`` stripped, or a one-line ``ValueError`` when it is not a plain name (see ``PLAIN_NAME``)."""
    name = raw.strip()
    if not name or len(name) > MAX_NAME or not PLAIN_NAME.fullmatch(name.lower()):
        shown = name if len(name) <= 40 else name[:40] + "..."
        raise ValueError(f"{what} {shown!r} is not a plain name (letters, digits, '_', '.', '-' and single "
                         f"spaces, starting with a letter or digit, at most {MAX_NAME} characters)")
    return name


def provider_name(raw: str) -> str:
    """The project's name for an archive's provider name (the table above, else the name itself);
    a name that is not plain (``plain_name``) is a ``ValueError``."""
    key = plain_name(" ".join(raw.split())).lower()
    return ALIASES.get(key, key)


def is_external(name: str) -> bool:
    """A provider the project has no scraper for (known from imports only), looked up by name:
    ``scrapers.registry.find`` imports only the module that can hold it, not every scraper."""
    from scrapers.registry import find

    return find(name) is None


def external_providers(reader: Reader) -> dict[str, reads.ProviderRow]:
    """Providers known from imported history only: stored, imported, and without a scraper."""
    imported = reads.imported_providers(reader)
    return {n: p for n, p in reads.providers(reader).items() if n in imported and is_external(n)}
