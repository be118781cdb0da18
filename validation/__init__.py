"""The calibration suite: Type I error and interval coverage of every registered test,
measured by simulation (``python -m validation.calibration --out reports/validation``, or
``make validate``). It lives beside the package, not in it: users' installs do not need it.
"""
