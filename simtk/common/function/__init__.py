"""Scalar functions of several arguments with analytic partial derivatives.

`Function` is what ``Constraint.CoordinateCoupler``, ``Constraint.PrescribedMotion`` and
``MobilizedBody.FunctionBased`` evaluate: a real-valued f(x) of ``m = get_argument_size()`` real arguments
together with its partial derivatives up to ``get_max_derivative_order()``.

Checked and unchecked entry points
----------------------------------
Users write a subclass exactly as in Simbody and override the four methods
``calc_value(x)``, ``calc_derivative(deriv_components, x)``, ``get_argument_size()`` and
``get_max_derivative_order()``. When such a class is created, ``Function.__init_subclass__`` moves the
method the user wrote to ``calc_value_unchecked`` (and ``calc_derivative_unchecked``) and puts a checking
wrapper in its place under the public name. So ``f.calc_value(x)`` always validates:

- ``x`` is a real 1-D sequence of length ``m`` (a scalar is accepted when ``m == 1``), all finite;
- ``deriv_components`` is a non-empty sequence of integer argument indices in ``[0, m)`` whose length (the
  derivative order) does not exceed ``get_max_derivative_order()``;
- the result is a finite real scalar.

Violations raise ``TypeError`` or ``ValueError`` naming the function class and what was wrong. Framework code
that has already validated a function (see `require_function`) and calls it in a time loop may use the
``*_unchecked`` twins: they take ``x`` as a float ndarray of shape ``(m,)`` and ``deriv_components`` as a
tuple of ints of length >= 1, and skip all checks.

The unchecked methods receive the caller's array; a function must not modify ``x``.

Compiled evaluation
-------------------
The built-in families (and OpenSim's SimmSpline, multiplier and coupler functions of ``simtk.io``) can
be compiled into a flat table that the compiled core evaluates without calling back into Python
(`FunctionTableBuilder`, `compile_function`; layout in ``core/functions.pxi``). The compiled values and
derivatives equal the Python methods' bitwise, but for Linear's dot product (numpy's is BLAS's, summed
in the library's order) and the derivatives of a Polynomial of degree above 20. A user's subclass has no
compiled form: the builder says so, and a caller keeps the Python methods.
"""
from __future__ import annotations

from ._base import UNLIMITED_DERIVATIVE_ORDER, Function, require_function
from ._compiled import FunctionTableBuilder, compile_function
from .families import _Constant, _Linear, _Polynomial, _Sinusoid, _Step
from .spline import _Spline

__all__ = ["Function", "require_function", "UNLIMITED_DERIVATIVE_ORDER", "FunctionTableBuilder", "compile_function"]

# The families are reached as Function.<Name>, as in Simbody.
for _cls in (_Constant, _Linear, _Polynomial, _Step, _Sinusoid, _Spline):
    _cls.__module__ = __name__
    setattr(Function, _cls.__qualname__.split(".")[1], _cls)
del _cls
