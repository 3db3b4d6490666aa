"""Errors the core raises for bad requests, named after YARN's exception classes.

The service layer turns them into RemoteException bodies (REST) or gRPC statuses; nothing in the
core has changed when one is raised.
"""

from __future__ import annotations


class YarnError(Exception):
    """A request the RM refuses. ``status`` is the HTTP status YARN's REST API would answer."""

    status = 400
    exception = "YarnException"
    java_class = "org.apache.hadoop.yarn.exceptions.YarnException"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(YarnError):
    status = 400
    exception = "BadRequestException"
    java_class = "org.apache.hadoop.yarn.webapp.BadRequestException"


class InvalidResourceRequest(YarnError):
    status = 400
    exception = "InvalidResourceRequestException"
    java_class = "org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException"


class NotFound(YarnError):
    status = 404
    exception = "NotFoundException"
    java_class = "org.apache.hadoop.yarn.webapp.NotFoundException"


class ApplicationNotFound(NotFound):
    exception = "ApplicationNotFoundException"
    java_class = "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException"


class Forbidden(YarnError):
    status = 403
    exception = "AuthorizationException"
    java_class = "org.apache.hadoop.security.authorize.AuthorizationException"


class InvalidToken(Forbidden):
    exception = "InvalidToken"
    java_class = "org.apache.hadoop.security.token.SecretManager$InvalidToken"


class AdmissionRefused(BadRequest):
    """The cluster's admission rule refused the submission; ``quote`` is the alternative it would admit."""

    exception = "AdmissionRefusedException"
    java_class = "org.apache.hadoop.yarn.exceptions.YarnException"

    def __init__(self, message: str, quote: dict[str, object] | None = None, *, conflict: bool = False) -> None:
        super().__init__(message)
        self.quote = dict(quote or {})
        if conflict:  # valid, but not possible in the cluster's state now (an infeasible or expired deadline)
            self.status = 409
            self.exception = "ConflictException"
            self.java_class = "org.apache.hadoop.yarn.webapp.ConflictException"


class Conflict(YarnError):
    """The request is valid but not in the object's current state (e.g. killing a finished app)."""

    status = 409
    exception = "ConflictException"
    java_class = "org.apache.hadoop.yarn.webapp.ConflictException"


class ApplicationMasterNotRegistered(YarnError):
    status = 409
    exception = "ApplicationMasterNotRegisteredException"
    java_class = "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException"


class ApplicationAttemptNotFound(YarnError):
    """A call from an attempt that has ended while its app goes on (it failed, expired or was superseded), or a
    client asking for an attempt its app never had."""

    status = 404
    exception = "ApplicationAttemptNotFoundException"
    java_class = "org.apache.hadoop.yarn.exceptions.ApplicationAttemptNotFoundException"


class ContainerNotFound(YarnError):
    """A client asking for a container the RM does not hold."""

    status = 404
    exception = "ContainerNotFoundException"
    java_class = "org.apache.hadoop.yarn.exceptions.ContainerNotFoundException"


class InvalidApplicationMasterRequest(YarnError):
    status = 409
    exception = "InvalidApplicationMasterRequestException"
    java_class = "org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException"


class StoreUnavailable(YarnError):
    """The change was applied but could not be written to the state store yet; it stays queued and is
    retried. Callers should retry the same request later (Hadoop IPC clients do so for this class)."""

    status = 503
    exception = "RetriableException"
    java_class = "org.apache.hadoop.ipc.RetriableException"
