"""Congestion-management schemes: their user-facing parameter tables (units
in the names, defaults from schemes.md) and how each maps to the engine.

A scheme name selects an engine scheme and a parameter table:

| name     | engine | table    | notes                                     |
|----------|--------|----------|-------------------------------------------|
| nocm     | nocm   |          | no congestion management                  |
| pause    | nocm   |          | `nocm` with PAUSE on                      |
| bcn      | bcn    | `bcn`    | BCN (baseline constants)                  |
| bcn00    | bcn    | `bcn`    | BCN with `bcn00 = true`                   |
| bcnmax   | bcn    | `bcn`    | BCN with `bcn_max = true`                 |
| ecm      | bcn    | `ecm`    | ECM (2007 BCN): its own defaults          |
| qcn      | qcn    | `qcn`    | QCN, final 802.1Qau standard              |
| qcn2pt   | qcn    | `qcn2pt` | QCN, July 2007 two-point proposal         |
| qcn3pt   | qcn    | `qcn3pt` | QCN, July 2007 three-point proposal       |
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

PS_PER_US = 1_000_000
PS_PER_MS = 1_000_000_000


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class BcnTable(_Table):
    """BCN / BCN(0,0) / BCN-Max parameters (schemes.md "BCN")."""

    qeq_pages: float = Field(375.0, gt=0, description="equilibrium queue Qeq (64-byte pages)")
    w: float = Field(2.0, ge=0, description="weight W of the queue derivative Qdelta")
    gi: float = Field(0.53, ge=0, description="increase gain Gi (per page of Fb, in units of Ru)")
    gd: float = Field(2.6e-4, ge=0, description="decrease gain Gd (per page of Fb)")
    ru_mbps: float = Field(1.0, gt=0, description="rate unit Ru (Mbit/s)")
    sample_bytes: float = Field(150_000.0, gt=0, description="mean sampling interval S (bytes)")
    jitter_bytes: float = Field(5_000.0, ge=0, description="each interval is S + U(-jitter, +jitter) (bytes)")
    qoff_lo_qeq: float = Field(1.0, gt=0, description="Qoff clipped below at -lo x Qeq")
    qoff_hi_qeq: float = Field(1.0, gt=0, description="Qoff clipped above at +hi x Qeq")
    qdelta_range_qeq: float = Field(2.0, gt=0, description="Qdelta clipped to +-range x Qeq")
    bcn_max: bool = Field(False, description="BCN-Max: above Qmc send the most negative Fb")
    qmc_bytes: float = Field(112_500.0, gt=0, description="BCN-Max threshold Qmc (bytes)")
    bcn00: bool = Field(False, description="BCN(0,0): above Qsc send a stop message")
    qsc_bytes: float = Field(112_500.0, gt=0, description="severe-congestion threshold Qsc (bytes)")
    tmax_us: float = Field(100.0, ge=0, description="BCN(0,0) stop time U(0, Tmax) (us)")
    rmin_gbps: float = Field(1.0, gt=0, description="BCN(0,0) restart rate Rmin (Gbit/s)")
    drift_mbps: float = Field(1.0, ge=0, description="drift step after a restart (Mbit/s)")
    drift_interval_us: float = Field(100.0, gt=0, description="drift period (us)")
    self_increase: bool = Field(False, description="drift every RL, not only after BCN(0,0)")
    oversampling: bool = Field(False, description="sample every sample_sev_bytes above a threshold")
    oversample_above_bytes: float = Field(
        112_500.0, gt=0, description="oversampling threshold (bytes; Qsc for BCN, Qmc for ECM)"
    )
    sample_sev_bytes: float = Field(
        15_000.0, gt=0, description="sampling interval while oversampling (bytes)"
    )
    min_rate_mbps: float = Field(
        5.0, gt=0, description="[derived] rate floor after a decrease (Mbit/s; docs/calibration.md)"
    )
    sample_dropped: bool = Field(
        True, description="[assumed] the sampler also sees frames the full queue drops"
    )
    notify_below_qeq: bool = Field(
        False,
        description="[derived] negative feedback also at or below Qeq, from the derivative term "
        "alone (the literal rule; off: only a queue above Qeq slows sources)",
    )
    positive_untagged: bool = Field(
        False,
        description="positive messages also for untagged sampled frames (not the spec; "
        "shows what the published ECM overhead counts, docs/calibration.md)",
    )

    def engine(self) -> dict[str, Any]:
        return {
            "name": "bcn",
            "qeq_pages": self.qeq_pages,
            "w": self.w,
            "gi": self.gi,
            "gd": self.gd,
            "ru_bps": self.ru_mbps * 1e6,
            "sample_bytes": self.sample_bytes,
            "jitter_bytes": self.jitter_bytes,
            "qoff_lo_qeq": self.qoff_lo_qeq,
            "qoff_hi_qeq": self.qoff_hi_qeq,
            "qdelta_range_qeq": self.qdelta_range_qeq,
            "bcn_max": self.bcn_max,
            "qmc_bytes": self.qmc_bytes,
            "bcn00": self.bcn00,
            "qsc_bytes": self.qsc_bytes,
            "tmax_ps": round(self.tmax_us * PS_PER_US),
            "rmin_bps": self.rmin_gbps * 1e9,
            "drift_bps": self.drift_mbps * 1e6,
            "drift_interval_ps": round(self.drift_interval_us * PS_PER_US),
            "self_increase": self.self_increase,
            "oversampling": self.oversampling,
            "oversample_above_bytes": self.oversample_above_bytes,
            "sample_sev_bytes": self.sample_sev_bytes,
            "min_rate_bps": self.min_rate_mbps * 1e6,
            "sample_dropped": self.sample_dropped,
            "notify_below_qeq": self.notify_below_qeq,
            "positive_untagged": self.positive_untagged,
        }

    def qeq_bytes(self) -> float:
        return self.qeq_pages * 64


class EcmTable(BcnTable):
    """ECM (2007 BCN) parameters (schemes.md "ECM")."""

    gi: float = Field(0.5333, ge=0, description="increase gain Gi")
    gd: float = Field(2.6667e-4, ge=0, description="decrease gain Gd")
    sample_bytes: float = Field(75_000.0, gt=0, description="FixedSamplingInt (bytes)")
    jitter_bytes: float = Field(5_000.0, ge=0, description="RandomSamplingInt = U(-j, +j) (bytes)")
    bcn_max: bool = Field(True, description="ECM-Max")
    qmc_bytes: float = Field(1300 * 64.0, gt=0, description="ECM-Max threshold Qmc (bytes)")
    oversampling: bool = Field(True, description="oversample above Qmc")
    oversample_above_bytes: float = Field(1300 * 64.0, gt=0, description="= Qmc (bytes)")


class QcnTable(_Table):
    """QCN parameters; defaults: the final 802.1Qau standard (schemes.md)."""

    qeq_bytes: float = Field(26_000.0, gt=0, description="equilibrium queue Qeq (bytes)")
    w: float = Field(2.0, ge=0, description="weight w of Qdelta")
    sampling: Literal["table", "bytes", "frames"] = Field(
        "table", description="table (final standard) | bytes / frames (2007 Pmin-Pmax rule)"
    )
    pmin: float = Field(0.01, gt=0, le=1, description="2007 sampling probability at qFb = 0")
    pmax: float = Field(0.1, gt=0, le=1, description="2007 sampling probability at qFb = 63")
    randomize: float = Field(0.15, ge=0, lt=1, description="intervals x U(1 - r, 1 + r)")
    refp: float = Field(0.04, ge=0, le=1, description="three-point: reflection probability")
    fb0_action: Literal["increase", "none"] = Field(
        "increase", description="three-point: what a qFb = 0 message does at the RP"
    )
    bc_limit_bytes: float = Field(150_000.0, gt=0, description="byte counter in fast recovery")
    bc_ai_bytes: float = Field(75_000.0, gt=0, description="byte counter in active increase")
    timer_ms: float = Field(15.0, ge=0, description="rate-increase timer T (ms; 0 = none)")
    fr_thr: int = Field(5, ge=1, description="fast-recovery threshold FRThr (cycles)")
    r_ai_mbps: float = Field(5.0, ge=0, description="active-increase step R_AI (Mbit/s)")
    r_hai_mbps: float = Field(50.0, ge=0, description="hyperactive-increase step R_HAI (Mbit/s)")
    hai: bool = Field(True, description="hyperactive increase")
    gd: float = Field(1 / 128, gt=0, lt=1, description="decrease gain Gd (per qFb unit)")
    min_dec_factor: float = Field(0.5, ge=0, le=1, description="smallest factor of one decrease")
    min_rate_mbps: float = Field(5.0, gt=0, description="minimum rate (Mbit/s)")
    efr: Literal["off", "reset_stage", "tr8", "standard"] = Field(
        "standard", description="Extra Fast Recovery reading (standard = reset_stage + tr8)"
    )
    sample_dropped: bool = Field(
        True, description="[assumed] the sampler also sees frames the full queue drops"
    )
    notify_below_qeq: bool = Field(
        False,
        description="[derived] a CNM (or mark) also at or below Qeq, from the derivative term "
        "alone (the literal rule; off: only a queue above Qeq slows sources)",
    )

    def engine(self, three_point: bool) -> dict[str, Any]:
        d = self.model_dump()
        d.pop("timer_ms")
        d.pop("r_ai_mbps")
        d.pop("r_hai_mbps")
        d.pop("min_rate_mbps")
        d.update(
            name="qcn",
            three_point=three_point,
            timer_ps=round(self.timer_ms * PS_PER_MS),
            r_ai_bps=self.r_ai_mbps * 1e6,
            r_hai_bps=self.r_hai_mbps * 1e6,
            min_rate_bps=self.min_rate_mbps * 1e6,
        )
        return d


class Qcn2007Table(QcnTable):
    """QCN as compared in July 2007 (schemes.md "QCN, 2007 proposals")."""

    qeq_bytes: float = Field(409 * 64.0, gt=0, description="Qeq = 409 pages of 64 B (bytes)")
    sampling: Literal["table", "bytes", "frames"] = Field("bytes", description="2007 rule by bytes")
    bc_ai_bytes: float = Field(37_500.0, gt=0, description="AIByteCnt (bytes)")
    timer_ms: float = Field(0.0, ge=0, description="no timer in 2007")
    r_ai_mbps: float = Field(12.0, ge=0, description="Ri, the active-increase step (Mbit/s)")
    hai: bool = Field(False, description="no hyperactive increase in 2007")
    efr: Literal["off", "reset_stage", "tr8", "standard"] = Field(
        "reset_stage", description="Extra Fast Recovery: off | reset_stage | tr8"
    )


class DcqcnTable(_Table):
    """DCQCN parameters (schemes.md "DCQCN"); run it with PAUSE (PFC) on."""

    kmin_bytes: float = Field(5_000.0, ge=0, description="ECN marking starts above Kmin (bytes)")
    kmax_bytes: float = Field(
        200_000.0, gt=0, description="marking probability Pmax at Kmax, 1 above (bytes)"
    )
    pmax: float = Field(0.01, gt=0, le=1, description="marking probability at Kmax")
    cnp_interval_us: float = Field(50.0, ge=0, description="at most one CNP per flow per interval (us)")
    g: float = Field(1 / 256, gt=0, lt=1, description="alpha gain g")
    timer_us: float = Field(55.0, gt=0, description="alpha-decay and rate-increase timer (us)")
    bc_bytes: float = Field(10e6, gt=0, description="rate-increase byte counter (bytes)")
    fr_thr: int = Field(5, ge=1, description="fast-recovery threshold F (stages)")
    r_ai_mbps: float = Field(40.0, ge=0, description="additive-increase step R_AI (Mbit/s)")
    r_hai_mbps: float = Field(100.0, ge=0, description="[assumed] hyper-increase step R_HAI (Mbit/s)")
    min_rate_mbps: float = Field(10.0, gt=0, description="[assumed] rate floor (Mbit/s)")

    def engine(self) -> dict[str, Any]:
        return {
            "name": "dcqcn",
            "kmin_bytes": self.kmin_bytes,
            "kmax_bytes": self.kmax_bytes,
            "pmax": self.pmax,
            "cnp_interval_ps": round(self.cnp_interval_us * PS_PER_US),
            "g": self.g,
            "timer_ps": round(self.timer_us * PS_PER_US),
            "bc_bytes": self.bc_bytes,
            "fr_thr": self.fr_thr,
            "r_ai_bps": self.r_ai_mbps * 1e6,
            "r_hai_bps": self.r_hai_mbps * 1e6,
            "min_rate_bps": self.min_rate_mbps * 1e6,
        }


#: Parameter tables by name, as they appear in scenario files (`[bcn]`, ...).
TABLES: dict[str, type[_Table]] = {
    "bcn": BcnTable,
    "ecm": EcmTable,
    "qcn": QcnTable,
    "qcn2pt": Qcn2007Table,
    "qcn3pt": Qcn2007Table,
    "dcqcn": DcqcnTable,
}

#: Scheme name -> (parameter table, one-line description).
SCHEMES: dict[str, tuple[str | None, str]] = {
    "nocm": (None, "no congestion management (combine with --pause)"),
    "pause": (None, "IEEE 802.3x PAUSE alone (= nocm --pause)"),
    "bcn": ("bcn", "Backward Congestion Notification (Cisco, 2006)"),
    "bcn00": ("bcn", "BCN with BCN(0,0) stop messages above Qsc"),
    "bcnmax": ("bcn", "BCN with BCN-Max (most negative Fb above Qmc)"),
    "ecm": ("ecm", "Ethernet Congestion Management (2007 BCN)"),
    "qcn": ("qcn", "Quantized Congestion Notification, final 802.1Qau"),
    "qcn2pt": ("qcn2pt", "QCN two-point, July 2007 proposal"),
    "qcn3pt": ("qcn3pt", "QCN three-point (reflection at the destination), July 2007"),
    "dcqcn": ("dcqcn", "DCQCN (RoCEv2, 2015): ECN marking, CNPs, per-flow rate limiters; use --pause (PFC)"),
}


def engine_scheme(name: str, table: _Table | None) -> dict[str, Any]:
    """The engine's scheme config for scheme `name` with its parameter table."""
    if name in ("nocm", "pause"):
        return {"name": "nocm"}
    assert table is not None
    if name in ("bcn", "bcn00", "bcnmax", "ecm"):
        assert isinstance(table, BcnTable)
        d = table.engine()
        if name == "bcn00":
            d["bcn00"] = True
        if name == "bcnmax":
            d["bcn_max"] = True
    elif name == "dcqcn":
        assert isinstance(table, DcqcnTable)
        d = table.engine()
    else:
        assert isinstance(table, QcnTable)
        d = table.engine(three_point=name == "qcn3pt")
    # The engine names the user's table in its errors.
    d["table"] = SCHEMES[name][0]
    return d


def qeq_bytes(name: str, table: _Table | None) -> float | None:
    """The scheme's equilibrium queue in bytes (drawn on queue plots)."""
    if isinstance(table, BcnTable):
        return table.qeq_bytes()
    if isinstance(table, QcnTable):
        return table.qeq_bytes
    return None
