"""One-off HTTP calls beside the measured stream (health probes, profiler control, eval and
calibration requests). They never follow a redirect: urllib would forward every header, the
API key's Authorization included, to wherever a 3xx points; a redirect raises HTTPError here
instead, so the caller reports the server's reply."""

from __future__ import annotations

import urllib.request
from typing import Any


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def open_no_redirect(req: urllib.request.Request | str, timeout: float) -> Any:
    """`urllib.request.urlopen`, with redirects refused."""
    return _OPENER.open(req, timeout=timeout)
