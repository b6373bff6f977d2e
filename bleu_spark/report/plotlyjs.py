"""The plotly.js the page embeds: the basic bundle vendored beside this module (`vendor/`, its
provenance and licence there; bar and scatter traces, all the page draws, in a quarter of the
full bundle's size), where it is the version the installed plotly builds figures for; else the
full bundle plotly ships, which is always that version."""
from __future__ import annotations

import functools
import re
from importlib import resources

from plotly.offline import get_plotlyjs, get_plotlyjs_version

BASIC = "plotly-basic.min.js"
# The bundle's first comment names its version: "plotly.js (basic - minified) v4.1.1".
_VERSION = re.compile(r"plotly\.js \(basic - minified\) v(\S+)")


def basic_bundle() -> str:
    return resources.files(__package__).joinpath("vendor", BASIC).read_text(encoding="utf-8")


def bundle_version(script: str) -> str:
    """The version a basic bundle's first comment names."""
    found = _VERSION.search(script[:300])
    if found is None:
        raise ValueError(f"{BASIC} names no version in its first comment")
    return found.group(1)


@functools.lru_cache(maxsize=1)
def plotly_js() -> str:
    # Figures are built for the installed plotly's plotly.js: another version may draw them
    # otherwise, so the basic bundle is used only where it is that version.
    basic = basic_bundle()
    return basic if bundle_version(basic) == get_plotlyjs_version() else get_plotlyjs()
