from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RpcKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RPC_BUILTIN: _ClassVar[RpcKind]
    RPC_WRITABLE: _ClassVar[RpcKind]
    RPC_PROTOCOL_BUFFER: _ClassVar[RpcKind]
RPC_BUILTIN: RpcKind
RPC_WRITABLE: RpcKind
RPC_PROTOCOL_BUFFER: RpcKind

class RpcTraceInfo(_message.Message):
    __slots__ = ("trace_id", "parent_id", "span_context")
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    SPAN_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    trace_id: int
    parent_id: int
    span_context: bytes
    def __init__(self, trace_id: _Optional[int] = ..., parent_id: _Optional[int] = ..., span_context: _Optional[bytes] = ...) -> None: ...

class RpcCallerContext(_message.Message):
    __slots__ = ("context", "signature")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    context: str
    signature: bytes
    def __init__(self, context: _Optional[str] = ..., signature: _Optional[bytes] = ...) -> None: ...

class RpcRequestHeader(_message.Message):
    __slots__ = ("rpc_kind", "rpc_op", "call_id", "client_id", "retry_count", "trace_info", "caller_context", "state_id", "router_federated_state", "authorization_header")
    class Operation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        FINAL_PACKET: _ClassVar[RpcRequestHeader.Operation]
        CONTINUATION_PACKET: _ClassVar[RpcRequestHeader.Operation]
        CLOSE_CONNECTION: _ClassVar[RpcRequestHeader.Operation]
    FINAL_PACKET: RpcRequestHeader.Operation
    CONTINUATION_PACKET: RpcRequestHeader.Operation
    CLOSE_CONNECTION: RpcRequestHeader.Operation
    RPC_KIND_FIELD_NUMBER: _ClassVar[int]
    RPC_OP_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    RETRY_COUNT_FIELD_NUMBER: _ClassVar[int]
    TRACE_INFO_FIELD_NUMBER: _ClassVar[int]
    CALLER_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    STATE_ID_FIELD_NUMBER: _ClassVar[int]
    ROUTER_FEDERATED_STATE_FIELD_NUMBER: _ClassVar[int]
    AUTHORIZATION_HEADER_FIELD_NUMBER: _ClassVar[int]
    rpc_kind: RpcKind
    rpc_op: RpcRequestHeader.Operation
    call_id: int
    client_id: bytes
    retry_count: int
    trace_info: RpcTraceInfo
    caller_context: RpcCallerContext
    state_id: int
    router_federated_state: bytes
    authorization_header: bytes
    def __init__(self, rpc_kind: _Optional[_Union[RpcKind, str]] = ..., rpc_op: _Optional[_Union[RpcRequestHeader.Operation, str]] = ..., call_id: _Optional[int] = ..., client_id: _Optional[bytes] = ..., retry_count: _Optional[int] = ..., trace_info: _Optional[_Union[RpcTraceInfo, _Mapping]] = ..., caller_context: _Optional[_Union[RpcCallerContext, _Mapping]] = ..., state_id: _Optional[int] = ..., router_federated_state: _Optional[bytes] = ..., authorization_header: _Optional[bytes] = ...) -> None: ...

class RpcResponseHeader(_message.Message):
    __slots__ = ("call_id", "status", "server_ipc_version_num", "exception_class_name", "error_msg", "error_detail", "client_id", "retry_count", "state_id", "router_federated_state")
    class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        SUCCESS: _ClassVar[RpcResponseHeader.Status]
        ERROR: _ClassVar[RpcResponseHeader.Status]
        FATAL: _ClassVar[RpcResponseHeader.Status]
    SUCCESS: RpcResponseHeader.Status
    ERROR: RpcResponseHeader.Status
    FATAL: RpcResponseHeader.Status
    class ErrorCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        ERROR_APPLICATION: _ClassVar[RpcResponseHeader.ErrorCode]
        ERROR_NO_SUCH_METHOD: _ClassVar[RpcResponseHeader.ErrorCode]
        ERROR_NO_SUCH_PROTOCOL: _ClassVar[RpcResponseHeader.ErrorCode]
        ERROR_RPC_SERVER: _ClassVar[RpcResponseHeader.ErrorCode]
        ERROR_SERIALIZING_RESPONSE: _ClassVar[RpcResponseHeader.ErrorCode]
        ERROR_RPC_VERSION_MISMATCH: _ClassVar[RpcResponseHeader.ErrorCode]
        FATAL_UNKNOWN: _ClassVar[RpcResponseHeader.ErrorCode]
        FATAL_UNSUPPORTED_SERIALIZATION: _ClassVar[RpcResponseHeader.ErrorCode]
        FATAL_INVALID_RPC_HEADER: _ClassVar[RpcResponseHeader.ErrorCode]
        FATAL_DESERIALIZING_REQUEST: _ClassVar[RpcResponseHeader.ErrorCode]
        FATAL_VERSION_MISMATCH: _ClassVar[RpcResponseHeader.ErrorCode]
        FATAL_UNAUTHORIZED: _ClassVar[RpcResponseHeader.ErrorCode]
    ERROR_APPLICATION: RpcResponseHeader.ErrorCode
    ERROR_NO_SUCH_METHOD: RpcResponseHeader.ErrorCode
    ERROR_NO_SUCH_PROTOCOL: RpcResponseHeader.ErrorCode
    ERROR_RPC_SERVER: RpcResponseHeader.ErrorCode
    ERROR_SERIALIZING_RESPONSE: RpcResponseHeader.ErrorCode
    ERROR_RPC_VERSION_MISMATCH: RpcResponseHeader.ErrorCode
    FATAL_UNKNOWN: RpcResponseHeader.ErrorCode
    FATAL_UNSUPPORTED_SERIALIZATION: RpcResponseHeader.ErrorCode
    FATAL_INVALID_RPC_HEADER: RpcResponseHeader.ErrorCode
    FATAL_DESERIALIZING_REQUEST: RpcResponseHeader.ErrorCode
    FATAL_VERSION_MISMATCH: RpcResponseHeader.ErrorCode
    FATAL_UNAUTHORIZED: RpcResponseHeader.ErrorCode
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SERVER_IPC_VERSION_NUM_FIELD_NUMBER: _ClassVar[int]
    EXCEPTION_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    ERROR_MSG_FIELD_NUMBER: _ClassVar[int]
    ERROR_DETAIL_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    RETRY_COUNT_FIELD_NUMBER: _ClassVar[int]
    STATE_ID_FIELD_NUMBER: _ClassVar[int]
    ROUTER_FEDERATED_STATE_FIELD_NUMBER: _ClassVar[int]
    call_id: int
    status: RpcResponseHeader.Status
    server_ipc_version_num: int
    exception_class_name: str
    error_msg: str
    error_detail: RpcResponseHeader.ErrorCode
    client_id: bytes
    retry_count: int
    state_id: int
    router_federated_state: bytes
    def __init__(self, call_id: _Optional[int] = ..., status: _Optional[_Union[RpcResponseHeader.Status, str]] = ..., server_ipc_version_num: _Optional[int] = ..., exception_class_name: _Optional[str] = ..., error_msg: _Optional[str] = ..., error_detail: _Optional[_Union[RpcResponseHeader.ErrorCode, str]] = ..., client_id: _Optional[bytes] = ..., retry_count: _Optional[int] = ..., state_id: _Optional[int] = ..., router_federated_state: _Optional[bytes] = ...) -> None: ...

class UserInformation(_message.Message):
    __slots__ = ("effective_user", "real_user")
    EFFECTIVE_USER_FIELD_NUMBER: _ClassVar[int]
    REAL_USER_FIELD_NUMBER: _ClassVar[int]
    effective_user: str
    real_user: str
    def __init__(self, effective_user: _Optional[str] = ..., real_user: _Optional[str] = ...) -> None: ...

class IpcConnectionContext(_message.Message):
    __slots__ = ("user_info", "protocol")
    USER_INFO_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    user_info: UserInformation
    protocol: str
    def __init__(self, user_info: _Optional[_Union[UserInformation, _Mapping]] = ..., protocol: _Optional[str] = ...) -> None: ...

class RequestHeader(_message.Message):
    __slots__ = ("method_name", "declaring_class_protocol_name", "client_protocol_version")
    METHOD_NAME_FIELD_NUMBER: _ClassVar[int]
    DECLARING_CLASS_PROTOCOL_NAME_FIELD_NUMBER: _ClassVar[int]
    CLIENT_PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    method_name: str
    declaring_class_protocol_name: str
    client_protocol_version: int
    def __init__(self, method_name: _Optional[str] = ..., declaring_class_protocol_name: _Optional[str] = ..., client_protocol_version: _Optional[int] = ...) -> None: ...

class RpcSasl(_message.Message):
    __slots__ = ("version", "state", "token", "auths")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        SUCCESS: _ClassVar[RpcSasl.State]
        NEGOTIATE: _ClassVar[RpcSasl.State]
        INITIATE: _ClassVar[RpcSasl.State]
        CHALLENGE: _ClassVar[RpcSasl.State]
        RESPONSE: _ClassVar[RpcSasl.State]
        WRAP: _ClassVar[RpcSasl.State]
    SUCCESS: RpcSasl.State
    NEGOTIATE: RpcSasl.State
    INITIATE: RpcSasl.State
    CHALLENGE: RpcSasl.State
    RESPONSE: RpcSasl.State
    WRAP: RpcSasl.State
    class Auth(_message.Message):
        __slots__ = ("method", "mechanism", "protocol", "server_id", "challenge")
        METHOD_FIELD_NUMBER: _ClassVar[int]
        MECHANISM_FIELD_NUMBER: _ClassVar[int]
        PROTOCOL_FIELD_NUMBER: _ClassVar[int]
        SERVER_ID_FIELD_NUMBER: _ClassVar[int]
        CHALLENGE_FIELD_NUMBER: _ClassVar[int]
        method: str
        mechanism: str
        protocol: str
        server_id: str
        challenge: bytes
        def __init__(self, method: _Optional[str] = ..., mechanism: _Optional[str] = ..., protocol: _Optional[str] = ..., server_id: _Optional[str] = ..., challenge: _Optional[bytes] = ...) -> None: ...
    VERSION_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    AUTHS_FIELD_NUMBER: _ClassVar[int]
    version: int
    state: RpcSasl.State
    token: bytes
    auths: _containers.RepeatedCompositeFieldContainer[RpcSasl.Auth]
    def __init__(self, version: _Optional[int] = ..., state: _Optional[_Union[RpcSasl.State, str]] = ..., token: _Optional[bytes] = ..., auths: _Optional[_Iterable[_Union[RpcSasl.Auth, _Mapping]]] = ...) -> None: ...

class Token(_message.Message):
    __slots__ = ("identifier", "password", "kind", "service")
    IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    PASSWORD_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    identifier: bytes
    password: bytes
    kind: str
    service: str
    def __init__(self, identifier: _Optional[bytes] = ..., password: _Optional[bytes] = ..., kind: _Optional[str] = ..., service: _Optional[str] = ...) -> None: ...

class CredentialsEntry(_message.Message):
    __slots__ = ("alias", "token", "secret")
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    alias: str
    token: Token
    secret: bytes
    def __init__(self, alias: _Optional[str] = ..., token: _Optional[_Union[Token, _Mapping]] = ..., secret: _Optional[bytes] = ...) -> None: ...

class Credentials(_message.Message):
    __slots__ = ("tokens", "secrets")
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    SECRETS_FIELD_NUMBER: _ClassVar[int]
    tokens: _containers.RepeatedCompositeFieldContainer[CredentialsEntry]
    secrets: _containers.RepeatedCompositeFieldContainer[CredentialsEntry]
    def __init__(self, tokens: _Optional[_Iterable[_Union[CredentialsEntry, _Mapping]]] = ..., secrets: _Optional[_Iterable[_Union[CredentialsEntry, _Mapping]]] = ...) -> None: ...
