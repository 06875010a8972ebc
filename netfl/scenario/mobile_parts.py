"""Parts of the mobile worlds' sections (iov, leo, and the road under a constellation)."""

from __future__ import annotations

from netfl.scenario.types import PositiveDuration, Section


class ResumeUploads(Section):
    """With ``enabled``, an upload cut by leaving coverage keeps what it sent and resumes at the
    next RSU the vehicle reaches within ``within``; the part the old RSU received is forwarded
    to the destination over the backhaul. Otherwise the upload is lost."""

    enabled: bool = False
    within: PositiveDuration = 30.0
