from proto.hadoop import yarn_records_pb2 as _yarn_records_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AMRMTokenIdentifier(_message.Message):
    __slots__ = ("app_attempt_id", "key_id")
    APP_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    app_attempt_id: _yarn_records_pb2.ApplicationAttemptId
    key_id: int
    def __init__(self, app_attempt_id: _Optional[_Union[_yarn_records_pb2.ApplicationAttemptId, _Mapping]] = ..., key_id: _Optional[int] = ...) -> None: ...

class NMTokenIdentifier(_message.Message):
    __slots__ = ("app_attempt_id", "node_id", "app_submitter", "key_id")
    APP_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    APP_SUBMITTER_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    app_attempt_id: _yarn_records_pb2.ApplicationAttemptId
    node_id: _yarn_records_pb2.NodeId
    app_submitter: str
    key_id: int
    def __init__(self, app_attempt_id: _Optional[_Union[_yarn_records_pb2.ApplicationAttemptId, _Mapping]] = ..., node_id: _Optional[_Union[_yarn_records_pb2.NodeId, _Mapping]] = ..., app_submitter: _Optional[str] = ..., key_id: _Optional[int] = ...) -> None: ...

class ContainerTokenIdentifier(_message.Message):
    __slots__ = ("container_id", "nm_host_addr", "app_submitter", "resource", "expiry_time_stamp", "master_key_id", "rm_identifier", "priority", "creation_time", "node_label_expression", "container_type", "execution_type", "version", "allocation_request_id", "allocation_tags")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    NM_HOST_ADDR_FIELD_NUMBER: _ClassVar[int]
    APP_SUBMITTER_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    EXPIRY_TIME_STAMP_FIELD_NUMBER: _ClassVar[int]
    MASTER_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    RM_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    CREATION_TIME_FIELD_NUMBER: _ClassVar[int]
    NODE_LABEL_EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_TYPE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_TAGS_FIELD_NUMBER: _ClassVar[int]
    container_id: _yarn_records_pb2.ContainerId
    nm_host_addr: str
    app_submitter: str
    resource: _yarn_records_pb2.Resource
    expiry_time_stamp: int
    master_key_id: int
    rm_identifier: int
    priority: _yarn_records_pb2.Priority
    creation_time: int
    node_label_expression: str
    container_type: _yarn_records_pb2.ContainerType
    execution_type: _yarn_records_pb2.ExecutionType
    version: int
    allocation_request_id: int
    allocation_tags: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, container_id: _Optional[_Union[_yarn_records_pb2.ContainerId, _Mapping]] = ..., nm_host_addr: _Optional[str] = ..., app_submitter: _Optional[str] = ..., resource: _Optional[_Union[_yarn_records_pb2.Resource, _Mapping]] = ..., expiry_time_stamp: _Optional[int] = ..., master_key_id: _Optional[int] = ..., rm_identifier: _Optional[int] = ..., priority: _Optional[_Union[_yarn_records_pb2.Priority, _Mapping]] = ..., creation_time: _Optional[int] = ..., node_label_expression: _Optional[str] = ..., container_type: _Optional[_Union[_yarn_records_pb2.ContainerType, str]] = ..., execution_type: _Optional[_Union[_yarn_records_pb2.ExecutionType, str]] = ..., version: _Optional[int] = ..., allocation_request_id: _Optional[int] = ..., allocation_tags: _Optional[_Iterable[str]] = ...) -> None: ...

class YARNDelegationTokenIdentifierProto(_message.Message):
    __slots__ = ("owner", "renewer", "realUser", "issueDate", "maxDate", "sequenceNumber", "masterKeyId")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    RENEWER_FIELD_NUMBER: _ClassVar[int]
    REALUSER_FIELD_NUMBER: _ClassVar[int]
    ISSUEDATE_FIELD_NUMBER: _ClassVar[int]
    MAXDATE_FIELD_NUMBER: _ClassVar[int]
    SEQUENCENUMBER_FIELD_NUMBER: _ClassVar[int]
    MASTERKEYID_FIELD_NUMBER: _ClassVar[int]
    owner: str
    renewer: str
    realUser: str
    issueDate: int
    maxDate: int
    sequenceNumber: int
    masterKeyId: int
    def __init__(self, owner: _Optional[str] = ..., renewer: _Optional[str] = ..., realUser: _Optional[str] = ..., issueDate: _Optional[int] = ..., maxDate: _Optional[int] = ..., sequenceNumber: _Optional[int] = ..., masterKeyId: _Optional[int] = ...) -> None: ...
