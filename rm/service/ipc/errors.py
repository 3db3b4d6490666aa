"""The RM's refusals (YarnError) as Hadoop RPC errors carrying the Java class clients re-throw."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from common.errors import YarnError
from common.hadoop.records import RecordError
from common.hadoop.server import RpcError
from common.hadoop.tokens import TokenError

YARN_EXCEPTION = "org.apache.hadoop.yarn.exceptions.YarnException"
INVALID_TOKEN = "org.apache.hadoop.security.token.SecretManager$InvalidToken"
ACCESS_CONTROL = "org.apache.hadoop.security.AccessControlException"


def java_class(err: YarnError) -> str:
    """YARN's REST-only exception classes (webapp.*) are not on a client's classpath: use
    YarnException for those, the named class otherwise."""
    return YARN_EXCEPTION if ".webapp." in err.java_class else err.java_class


@contextmanager
def as_rpc_errors() -> Iterator[None]:
    try:
        yield
    except YarnError as err:
        raise RpcError(java_class(err), err.message) from err
    except TokenError as err:
        raise RpcError(INVALID_TOKEN, str(err)) from err
    except (RecordError, ValueError) as err:
        raise RpcError(YARN_EXCEPTION, str(err)) from err
