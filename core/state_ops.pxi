# The per-call bookkeeping of simtk.common.state.State, compiled: what every set_q, set_u, set_time
# and upd_y pays (a time loop on the Python path, a user's set_q + realize). Each function is the
# Python method's logic, line by line, on the same attributes (the State stays a Python object);
# simtk/common/state.py binds them.
#
# Slots by offset. The State's bookkeeping attributes are __slots__: object pointers at fixed
# offsets in the instance, which the interpreter itself reads by offset once it has looked one up
# (3.11's LOAD_ATTR_SLOT). From C, an attribute access looks the name up in the type's MRO every
# time (~20 ns); register_state_slots resolves each slot's offset once, from its member
# descriptor, and the functions here read and write the pointers directly (~1 ns) on objects of
# exactly the registered classes, and by name on anything else.

from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from types import MemberDescriptorType

cdef extern from "structmember.h":
    ctypedef struct PyMemberDef:
        const char* name
        int type
        Py_ssize_t offset
    int T_OBJECT_EX

cdef extern from "Python.h":
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member

cdef enum:
    SO_MODEL = 2        # simtk.common.stage's Model
    SO_NSTAGES = 11     # its Empty .. Infinity (FS_INSTANCE: core/realize.pxi)


cdef struct StateSlots:
    Py_ssize_t system, topology_version, subs, stage, hi, epoch, inval_epoch, fused
    Py_ssize_t sub_stage        # _SubsystemState.stage

cdef StateSlots SL
cdef object _STATE = None       # the registered classes (None: not yet, every access by name)
cdef object _SUBSTATE = None


cdef Py_ssize_t _slot_offset(type cls, str name) except -1:
    # The offset of cls's own slot ``name``, from its member descriptor (an object slot).
    d = cls.__dict__.get(name)
    if type(d) is not MemberDescriptorType or d.__objclass__ is not cls:
        raise TypeError(f"{cls.__name__}.{name} is not a slot of {cls.__name__}")
    if (<PyMemberDescrObject*>d).d_member.type != T_OBJECT_EX:
        raise TypeError(f"{cls.__name__}.{name} is not an object slot")
    return (<PyMemberDescrObject*>d).d_member.offset


def register_state_slots(type state, type subsystem_state):
    """Resolve the offsets of the State's bookkeeping slots (see the file's head); called once by
    simtk/common/state.py with its State and _SubsystemState classes."""
    global SL, _STATE, _SUBSTATE
    cdef StateSlots found  # all resolved before any is used: a refused class changes nothing
    found.system = _slot_offset(state, "_system")
    found.topology_version = _slot_offset(state, "_topology_version")
    found.subs = _slot_offset(state, "_subs")
    found.stage = _slot_offset(state, "_stage")
    found.hi = _slot_offset(state, "_hi")
    found.epoch = _slot_offset(state, "_epoch")
    found.inval_epoch = _slot_offset(state, "_inval_epoch")
    found.fused = _slot_offset(state, "_fused")
    found.sub_stage = _slot_offset(subsystem_state, "stage")
    SL = found
    _STATE, _SUBSTATE = state, subsystem_state


cdef inline object slot_get(object o, Py_ssize_t offset):
    # o's slot at offset (set: every bookkeeping slot is assigned in __init__ and never deleted)
    cdef PyObject* v = (<PyObject**>((<char*>(<PyObject*>o)) + offset))[0]
    if v == NULL:
        raise AttributeError("a State slot was deleted")
    return <object>v


cdef inline void slot_set(object o, Py_ssize_t offset, object value):
    cdef PyObject** p = <PyObject**>((<char*>(<PyObject*>o)) + offset)
    cdef PyObject* old = p[0]
    Py_INCREF(value)
    p[0] = <PyObject*>value
    Py_XDECREF(old)


cdef inline bint is_state(object o):
    return type(o) is _STATE  # (None until registered: then no object is)


cdef inline void set_subsystem_stages(list subs, object stage):
    # every subsystem's stage = stage
    for ss in subs:
        if type(ss) is _SUBSTATE:
            slot_set(ss, SL.sub_stage, stage)
        else:
            ss.stage = stage


def state_invalidate(object self, int stage):
    """State._invalidate(stage): drop every subsystem below ``stage``; forget the allocations made
    at ``stage`` or later (Instance and below)."""
    if is_state(self):
        _invalidate_slots(self, stage)
    else:
        _invalidate_by_name(self, stage)


def state_set_vector(object self, cnp.ndarray dst, object values, int stage):
    """State.set_q's and set_u's common case in one call: when ``self`` is a State of the registered
    class, at Model or above and current with its System, and ``values`` a C-contiguous float64
    vector of dst's length with finite entries, copy it into ``dst`` (q or u), invalidate ``stage``
    and return True; else do nothing and return False, for the caller's checks to convert
    ``values`` or say what is wrong."""
    if not is_state(self) or slot_get(self, SL.stage) < SO_MODEL:
        return False
    system = slot_get(self, SL.system)
    if system is not None and system._topology_version != slot_get(self, SL.topology_version):
        return False
    if not _copy_if_finite(dst, values):
        return False
    _invalidate_slots(self, stage)
    return True


cdef int _invalidate_slots(object self, int stage) except -1:
    # state_invalidate on a State of the registered class, its slots by offset
    cdef list ie
    cdef Py_ssize_t s
    cdef int lower
    ie = slot_get(self, SL.inval_epoch)
    e = slot_get(self, SL.epoch) + 1
    slot_set(self, SL.epoch, e)
    # _inval_epoch[s] is the epoch of the last invalidation at or below s (epochs only grow)
    for s in range(stage, SO_NSTAGES):
        ie[s] = e
    if slot_get(self, SL.hi) >= stage:
        lower = stage - 1
        low = lower
        for ss in <list>slot_get(self, SL.subs):
            if type(ss) is _SUBSTATE:
                if slot_get(ss, SL.sub_stage) > lower:
                    slot_set(ss, SL.sub_stage, low)
            elif ss.stage > lower:
                ss.stage = low
        slot_set(self, SL.hi, low)
        if slot_get(self, SL.stage) > lower:
            slot_set(self, SL.stage, low)
        if stage <= FS_INSTANCE:
            self._forget_allocations(stage)
            slot_set(self, SL.fused, None)
    return 0


cdef _invalidate_by_name(object self, int stage):
    # state_invalidate on an object of another class (a State subclass, say): by attribute name
    cdef list ie = self._inval_epoch
    cdef Py_ssize_t s
    cdef int lower
    e = self._epoch + 1
    self._epoch = e
    for s in range(stage, SO_NSTAGES):
        ie[s] = e
    if self._hi >= stage:
        lower = stage - 1
        for ss in self._subs:
            if ss.stage > lower:
                ss.stage = lower
        self._hi = lower
        if self._stage > lower:
            self._stage = lower
        if stage <= FS_INSTANCE:
            self._forget_allocations(stage)
            self._fused = None


def copied_if_finite(cnp.ndarray dst, object src):
    """Copy ``src`` into ``dst`` and return True when ``src`` is a C-contiguous float64 vector of
    dst's length whose entries are all finite (``dst``: a writable C-contiguous float64 array);
    else copy nothing and return False, for the caller to convert ``src`` or say what is wrong."""
    return _copy_if_finite(dst, src)


cdef bint _copy_if_finite(cnp.ndarray dst, object src) except -1:
    cdef Py_ssize_t n = cnp.PyArray_SIZE(dst)
    cdef const double* s
    if type(src) is not np.ndarray or cnp.PyArray_NDIM(<cnp.ndarray>src) != 1 \
            or not _is_f64_vector(src, n, False) or not _is_f64_vector(dst, n, True):
        return False
    s = <const double*>cnp.PyArray_DATA(<cnp.ndarray>src)
    if first_non_finite_at(s, n) >= 0:
        return False
    if n:
        memcpy(<double*>cnp.PyArray_DATA(dst), s, n * sizeof(double))
    return True
