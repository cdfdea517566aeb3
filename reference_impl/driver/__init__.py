"""The reference implementation behind the driver protocol, in-process or over stdio.

:class:`ReferenceDriver` answers the protocol's methods as Python calls; ``python -m
reference_impl.driver`` serves the same object as JSON-RPC lines on stdin and stdout.
"""

from ._session import DriverError, ReferenceDriver

__all__ = ["DriverError", "ReferenceDriver"]
