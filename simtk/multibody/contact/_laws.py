"""Checked doors to the compiled contact laws of ``core/contact_laws.pxi``.

Each function validates shapes and dtypes once and calls one compiled kernel over all contacts
(Hunt-Crossley) or all elements (smooth sphere/half-space); the kernels themselves check nothing.
"""
from __future__ import annotations

import numpy as np

from ... import _core

__all__ = ["HC_REPORT_COLUMNS", "SMOOTH_PARAMS", "SMOOTH_REPORT_COLUMNS", "hunt_crossley_law",
           "smooth_sphere_half_space_law"]

_k = _core._k
HC_REPORT_COLUMNS: tuple = tuple(_k.HC_REPORT_COLUMNS)
SMOOTH_PARAMS: tuple = tuple(_k.SMOOTH_PARAMS)
SMOOTH_REPORT_COLUMNS: tuple = tuple(_k.SMOOTH_REPORT_COLUMNS)


def _f64(x, shape: tuple, what: str) -> np.ndarray:
    a = np.ascontiguousarray(x, dtype=np.float64)
    if a.shape != shape:
        raise ValueError(f"{what}: expected shape {shape}, got {a.shape}")
    return a


def _i64(x, n: int, nmax: int, what: str) -> np.ndarray:
    a = np.ascontiguousarray(x, dtype=np.int64).reshape(-1)
    if a.shape != (n,):
        raise ValueError(f"{what}: expected {n} indices, got shape {a.shape}")
    if n and (a.min() < 0 or a.max() >= nmax):
        raise IndexError(f"{what}: an index is outside 0..{nmax - 1}")
    return a


def _kinematics(ws) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    return ws.R_GB, ws.p_GB, ws.V_GB, int(ws.nb)


def _check_contacts(contacts, ns: int) -> tuple:
    nc = int(np.shape(contacts.depth)[0])
    s1 = _i64(contacts.surf1, nc, ns, "contacts.surf1")
    s2 = _i64(contacts.surf2, nc, ns, "contacts.surf2")
    p = _f64(contacts.p_G, (nc, 3), "contacts.p_G")
    n = _f64(contacts.n_G, (nc, 3), "contacts.n_G")
    d = _f64(contacts.depth, (nc,), "contacts.depth")
    R1 = _f64(contacts.R1, (nc,), "contacts.R1")
    R2 = _f64(contacts.R2, (nc,), "contacts.R2")
    return nc, s1, s2, p, n, d, R1, R2


def hunt_crossley_law(surf_body, surf_law, transition_velocity: float, contacts, ws,
                      body_forces: np.ndarray) -> tuple[float, np.ndarray]:
    """Add the Hunt-Crossley forces of ``contacts`` to ``body_forces`` (nb, 2, 3).

    Parameters
    ----------
    surf_body : array_like of int, shape (ns,)
        The body index of each surface.
    surf_law : array_like, shape (ns, 5)
        Per surface: stiffness^(2/3), dissipation, static, dynamic and viscous friction.
    transition_velocity : float
        The slip speed of the Stribeck peak (> 0).
    contacts : Contacts
        What ``detect`` returned for these surfaces.
    ws : simtk_core.TreeKernels
        A workspace realized to Velocity.
    body_forces : numpy.ndarray, shape (nb, 2, 3), C-contiguous float64
        Accumulator.

    Returns
    -------
    energy : float
        The Hertz springs' potential energy.
    report : numpy.ndarray, shape (nc, 9)
        Per contact, the columns of ``HC_REPORT_COLUMNS``.
    """
    _, p_GB, V_GB, nb = _kinematics(ws)
    ns = int(np.shape(surf_law)[0])
    law = _f64(surf_law, (ns, 5), "surf_law")
    bodies = _i64(surf_body, ns, nb, "surf_body")
    nc, s1, s2, p, n, d, R1, R2 = _check_contacts(contacts, ns)
    if not (body_forces.shape == (nb, 2, 3) and body_forces.dtype == np.float64
            and body_forces.flags.c_contiguous):
        raise ValueError(f"body_forces: expected a C-contiguous float64 array of shape {(nb, 2, 3)}")
    vt = float(transition_velocity)
    if not vt > 0:
        raise ValueError(f"transition_velocity must be > 0, got {vt!r}")
    report = np.zeros((nc, len(HC_REPORT_COLUMNS)))
    energy = _k.hunt_crossley_law(bodies, law, vt, s1, s2, p, n, d, R1, R2, p_GB, V_GB, body_forces, report)
    return float(energy), report


def smooth_sphere_half_space_law(sphere_body, p_BS, half_space_body, R_HF, p_HF, params, ws,
                                 body_forces: np.ndarray) -> tuple[float, np.ndarray]:
    """Add the forces of ``n`` smooth sphere/half-space elements to ``body_forces`` (nb, 2, 3).

    ``p_BS`` (n, 3) sphere centres in their bodies; ``R_HF`` (n, 3, 3), ``p_HF`` (n, 3) the
    half-space frames in their bodies; ``params`` (n, 10) in the order of ``SMOOTH_PARAMS``. Returns
    the total (approximate) energy and the per-element report (n, 9) (``SMOOTH_REPORT_COLUMNS``).
    """
    R_GB, p_GB, V_GB, nb = _kinematics(ws)
    m = int(np.shape(params)[0])
    prm = _f64(params, (m, len(SMOOTH_PARAMS)), "params")
    sb = _i64(sphere_body, m, nb, "sphere_body")
    hb = _i64(half_space_body, m, nb, "half_space_body")
    pbs = _f64(p_BS, (m, 3), "p_BS")
    rhf = _f64(R_HF, (m, 3, 3), "R_HF")
    phf = _f64(p_HF, (m, 3), "p_HF")
    if not (body_forces.shape == (nb, 2, 3) and body_forces.dtype == np.float64
            and body_forces.flags.c_contiguous):
        raise ValueError(f"body_forces: expected a C-contiguous float64 array of shape {(nb, 2, 3)}")
    report = np.zeros((m, len(SMOOTH_REPORT_COLUMNS)))
    energy = _k.smooth_sphere_half_space_law(sb, pbs, hb, rhf, phf, prm, R_GB, p_GB, V_GB, body_forces, report)
    return float(energy), report
