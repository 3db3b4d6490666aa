from proto.hadoop import ipc_pb2 as _ipc_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ResourceType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COUNTABLE: _ClassVar[ResourceType]

class ExecutionType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GUARANTEED: _ClassVar[ExecutionType]
    OPPORTUNISTIC: _ClassVar[ExecutionType]

class ContainerState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    C_NEW: _ClassVar[ContainerState]
    C_RUNNING: _ClassVar[ContainerState]
    C_COMPLETE: _ClassVar[ContainerState]

class ContainerType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPLICATION_MASTER: _ClassVar[ContainerType]
    TASK: _ClassVar[ContainerType]

class LocalResourceType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ARCHIVE: _ClassVar[LocalResourceType]
    FILE: _ClassVar[LocalResourceType]
    PATTERN: _ClassVar[LocalResourceType]

class LocalResourceVisibility(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PUBLIC: _ClassVar[LocalResourceVisibility]
    PRIVATE: _ClassVar[LocalResourceVisibility]
    APPLICATION: _ClassVar[LocalResourceVisibility]

class ApplicationAccessType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPACCESS_VIEW_APP: _ClassVar[ApplicationAccessType]
    APPACCESS_MODIFY_APP: _ClassVar[ApplicationAccessType]

class YarnApplicationState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NEW: _ClassVar[YarnApplicationState]
    NEW_SAVING: _ClassVar[YarnApplicationState]
    SUBMITTED: _ClassVar[YarnApplicationState]
    ACCEPTED: _ClassVar[YarnApplicationState]
    RUNNING: _ClassVar[YarnApplicationState]
    FINISHED: _ClassVar[YarnApplicationState]
    FAILED: _ClassVar[YarnApplicationState]
    KILLED: _ClassVar[YarnApplicationState]

class YarnApplicationAttemptState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APP_ATTEMPT_NEW: _ClassVar[YarnApplicationAttemptState]
    APP_ATTEMPT_SUBMITTED: _ClassVar[YarnApplicationAttemptState]
    APP_ATTEMPT_SCHEDULED: _ClassVar[YarnApplicationAttemptState]
    APP_ATTEMPT_ALLOCATED_SAVING: _ClassVar[YarnApplicationAttemptState]
    APP_ATTEMPT_ALLOCATED: _ClassVar[YarnApplicationAttemptState]
    APP_ATTEMPT_LAUNCHED: _ClassVar[YarnApplicationAttemptState]
    APP_ATTEMPT_FAILED: _ClassVar[YarnApplicationAttemptState]
    APP_ATTEMPT_RUNNING: _ClassVar[YarnApplicationAttemptState]
    APP_ATTEMPT_FINISHING: _ClassVar[YarnApplicationAttemptState]
    APP_ATTEMPT_FINISHED: _ClassVar[YarnApplicationAttemptState]
    APP_ATTEMPT_KILLED: _ClassVar[YarnApplicationAttemptState]

class FinalApplicationStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APP_UNDEFINED: _ClassVar[FinalApplicationStatus]
    APP_SUCCEEDED: _ClassVar[FinalApplicationStatus]
    APP_FAILED: _ClassVar[FinalApplicationStatus]
    APP_KILLED: _ClassVar[FinalApplicationStatus]
    APP_ENDED: _ClassVar[FinalApplicationStatus]

class NodeState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NS_NEW: _ClassVar[NodeState]
    NS_RUNNING: _ClassVar[NodeState]
    NS_UNHEALTHY: _ClassVar[NodeState]
    NS_DECOMMISSIONED: _ClassVar[NodeState]
    NS_LOST: _ClassVar[NodeState]
    NS_REBOOTED: _ClassVar[NodeState]
    NS_DECOMMISSIONING: _ClassVar[NodeState]
    NS_SHUTDOWN: _ClassVar[NodeState]

class QueueState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    Q_STOPPED: _ClassVar[QueueState]
    Q_RUNNING: _ClassVar[QueueState]
    Q_DRAINING: _ClassVar[QueueState]

class ReservationRequestInterpreter(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    R_ANY: _ClassVar[ReservationRequestInterpreter]
    R_ALL: _ClassVar[ReservationRequestInterpreter]
    R_ORDER: _ClassVar[ReservationRequestInterpreter]
    R_ORDER_NO_GAP: _ClassVar[ReservationRequestInterpreter]
COUNTABLE: ResourceType
GUARANTEED: ExecutionType
OPPORTUNISTIC: ExecutionType
C_NEW: ContainerState
C_RUNNING: ContainerState
C_COMPLETE: ContainerState
APPLICATION_MASTER: ContainerType
TASK: ContainerType
ARCHIVE: LocalResourceType
FILE: LocalResourceType
PATTERN: LocalResourceType
PUBLIC: LocalResourceVisibility
PRIVATE: LocalResourceVisibility
APPLICATION: LocalResourceVisibility
APPACCESS_VIEW_APP: ApplicationAccessType
APPACCESS_MODIFY_APP: ApplicationAccessType
NEW: YarnApplicationState
NEW_SAVING: YarnApplicationState
SUBMITTED: YarnApplicationState
ACCEPTED: YarnApplicationState
RUNNING: YarnApplicationState
FINISHED: YarnApplicationState
FAILED: YarnApplicationState
KILLED: YarnApplicationState
APP_ATTEMPT_NEW: YarnApplicationAttemptState
APP_ATTEMPT_SUBMITTED: YarnApplicationAttemptState
APP_ATTEMPT_SCHEDULED: YarnApplicationAttemptState
APP_ATTEMPT_ALLOCATED_SAVING: YarnApplicationAttemptState
APP_ATTEMPT_ALLOCATED: YarnApplicationAttemptState
APP_ATTEMPT_LAUNCHED: YarnApplicationAttemptState
APP_ATTEMPT_FAILED: YarnApplicationAttemptState
APP_ATTEMPT_RUNNING: YarnApplicationAttemptState
APP_ATTEMPT_FINISHING: YarnApplicationAttemptState
APP_ATTEMPT_FINISHED: YarnApplicationAttemptState
APP_ATTEMPT_KILLED: YarnApplicationAttemptState
APP_UNDEFINED: FinalApplicationStatus
APP_SUCCEEDED: FinalApplicationStatus
APP_FAILED: FinalApplicationStatus
APP_KILLED: FinalApplicationStatus
APP_ENDED: FinalApplicationStatus
NS_NEW: NodeState
NS_RUNNING: NodeState
NS_UNHEALTHY: NodeState
NS_DECOMMISSIONED: NodeState
NS_LOST: NodeState
NS_REBOOTED: NodeState
NS_DECOMMISSIONING: NodeState
NS_SHUTDOWN: NodeState
Q_STOPPED: QueueState
Q_RUNNING: QueueState
Q_DRAINING: QueueState
R_ANY: ReservationRequestInterpreter
R_ALL: ReservationRequestInterpreter
R_ORDER: ReservationRequestInterpreter
R_ORDER_NO_GAP: ReservationRequestInterpreter

class ApplicationId(_message.Message):
    __slots__ = ("id", "cluster_timestamp")
    ID_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    id: int
    cluster_timestamp: int
    def __init__(self, id: _Optional[int] = ..., cluster_timestamp: _Optional[int] = ...) -> None: ...

class ReservationId(_message.Message):
    __slots__ = ("id", "cluster_timestamp")
    ID_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    id: int
    cluster_timestamp: int
    def __init__(self, id: _Optional[int] = ..., cluster_timestamp: _Optional[int] = ...) -> None: ...

class ApplicationAttemptId(_message.Message):
    __slots__ = ("application_id", "attempt_id")
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    application_id: ApplicationId
    attempt_id: int
    def __init__(self, application_id: _Optional[_Union[ApplicationId, _Mapping]] = ..., attempt_id: _Optional[int] = ...) -> None: ...

class ContainerId(_message.Message):
    __slots__ = ("app_id", "app_attempt_id", "id")
    APP_ID_FIELD_NUMBER: _ClassVar[int]
    APP_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    app_id: ApplicationId
    app_attempt_id: ApplicationAttemptId
    id: int
    def __init__(self, app_id: _Optional[_Union[ApplicationId, _Mapping]] = ..., app_attempt_id: _Optional[_Union[ApplicationAttemptId, _Mapping]] = ..., id: _Optional[int] = ...) -> None: ...

class NodeId(_message.Message):
    __slots__ = ("host", "port")
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    host: str
    port: int
    def __init__(self, host: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class StringStringMap(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class StringBytesMap(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: bytes
    def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...

class ResourceInformation(_message.Message):
    __slots__ = ("key", "value", "units", "type", "tags", "attributes")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    UNITS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: int
    units: str
    type: ResourceType
    tags: _containers.RepeatedScalarFieldContainer[str]
    attributes: _containers.RepeatedCompositeFieldContainer[StringStringMap]
    def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ..., units: _Optional[str] = ..., type: _Optional[_Union[ResourceType, str]] = ..., tags: _Optional[_Iterable[str]] = ..., attributes: _Optional[_Iterable[_Union[StringStringMap, _Mapping]]] = ...) -> None: ...

class Resource(_message.Message):
    __slots__ = ("memory", "virtual_cores", "resource_value_map")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    VIRTUAL_CORES_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VALUE_MAP_FIELD_NUMBER: _ClassVar[int]
    memory: int
    virtual_cores: int
    resource_value_map: _containers.RepeatedCompositeFieldContainer[ResourceInformation]
    def __init__(self, memory: _Optional[int] = ..., virtual_cores: _Optional[int] = ..., resource_value_map: _Optional[_Iterable[_Union[ResourceInformation, _Mapping]]] = ...) -> None: ...

class Priority(_message.Message):
    __slots__ = ("priority",)
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    priority: int
    def __init__(self, priority: _Optional[int] = ...) -> None: ...

class ExecutionTypeRequest(_message.Message):
    __slots__ = ("execution_type", "enforce_execution_type")
    EXECUTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    ENFORCE_EXECUTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    execution_type: ExecutionType
    enforce_execution_type: bool
    def __init__(self, execution_type: _Optional[_Union[ExecutionType, str]] = ..., enforce_execution_type: _Optional[bool] = ...) -> None: ...

class ResourceRequest(_message.Message):
    __slots__ = ("priority", "resource_name", "capability", "num_containers", "relax_locality", "node_label_expression", "execution_type_request", "allocation_request_id")
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    NUM_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    RELAX_LOCALITY_FIELD_NUMBER: _ClassVar[int]
    NODE_LABEL_EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TYPE_REQUEST_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    priority: Priority
    resource_name: str
    capability: Resource
    num_containers: int
    relax_locality: bool
    node_label_expression: str
    execution_type_request: ExecutionTypeRequest
    allocation_request_id: int
    def __init__(self, priority: _Optional[_Union[Priority, _Mapping]] = ..., resource_name: _Optional[str] = ..., capability: _Optional[_Union[Resource, _Mapping]] = ..., num_containers: _Optional[int] = ..., relax_locality: _Optional[bool] = ..., node_label_expression: _Optional[str] = ..., execution_type_request: _Optional[_Union[ExecutionTypeRequest, _Mapping]] = ..., allocation_request_id: _Optional[int] = ...) -> None: ...

class Container(_message.Message):
    __slots__ = ("id", "node_id", "node_http_address", "resource", "priority", "container_token", "execution_type", "allocation_request_id", "version", "allocation_tags", "exposed_ports")
    ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_HTTP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_TAGS_FIELD_NUMBER: _ClassVar[int]
    EXPOSED_PORTS_FIELD_NUMBER: _ClassVar[int]
    id: ContainerId
    node_id: NodeId
    node_http_address: str
    resource: Resource
    priority: Priority
    container_token: _ipc_pb2.Token
    execution_type: ExecutionType
    allocation_request_id: int
    version: int
    allocation_tags: _containers.RepeatedScalarFieldContainer[str]
    exposed_ports: str
    def __init__(self, id: _Optional[_Union[ContainerId, _Mapping]] = ..., node_id: _Optional[_Union[NodeId, _Mapping]] = ..., node_http_address: _Optional[str] = ..., resource: _Optional[_Union[Resource, _Mapping]] = ..., priority: _Optional[_Union[Priority, _Mapping]] = ..., container_token: _Optional[_Union[_ipc_pb2.Token, _Mapping]] = ..., execution_type: _Optional[_Union[ExecutionType, str]] = ..., allocation_request_id: _Optional[int] = ..., version: _Optional[int] = ..., allocation_tags: _Optional[_Iterable[str]] = ..., exposed_ports: _Optional[str] = ...) -> None: ...

class ContainerStatus(_message.Message):
    __slots__ = ("container_id", "state", "diagnostics", "exit_status", "capability", "execution_type")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    EXIT_STATUS_FIELD_NUMBER: _ClassVar[int]
    CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    container_id: ContainerId
    state: ContainerState
    diagnostics: str
    exit_status: int
    capability: Resource
    execution_type: ExecutionType
    def __init__(self, container_id: _Optional[_Union[ContainerId, _Mapping]] = ..., state: _Optional[_Union[ContainerState, str]] = ..., diagnostics: _Optional[str] = ..., exit_status: _Optional[int] = ..., capability: _Optional[_Union[Resource, _Mapping]] = ..., execution_type: _Optional[_Union[ExecutionType, str]] = ...) -> None: ...

class ContainerReport(_message.Message):
    __slots__ = ("container_id", "resource", "node_id", "priority", "creation_time", "finish_time", "diagnostics_info", "log_url", "container_exit_status", "container_state", "node_http_address", "execution_type")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    CREATION_TIME_FIELD_NUMBER: _ClassVar[int]
    FINISH_TIME_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_INFO_FIELD_NUMBER: _ClassVar[int]
    LOG_URL_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_EXIT_STATUS_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_STATE_FIELD_NUMBER: _ClassVar[int]
    NODE_HTTP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    container_id: ContainerId
    resource: Resource
    node_id: NodeId
    priority: Priority
    creation_time: int
    finish_time: int
    diagnostics_info: str
    log_url: str
    container_exit_status: int
    container_state: ContainerState
    node_http_address: str
    execution_type: ExecutionType
    def __init__(self, container_id: _Optional[_Union[ContainerId, _Mapping]] = ..., resource: _Optional[_Union[Resource, _Mapping]] = ..., node_id: _Optional[_Union[NodeId, _Mapping]] = ..., priority: _Optional[_Union[Priority, _Mapping]] = ..., creation_time: _Optional[int] = ..., finish_time: _Optional[int] = ..., diagnostics_info: _Optional[str] = ..., log_url: _Optional[str] = ..., container_exit_status: _Optional[int] = ..., container_state: _Optional[_Union[ContainerState, str]] = ..., node_http_address: _Optional[str] = ..., execution_type: _Optional[_Union[ExecutionType, str]] = ...) -> None: ...

class SerializedException(_message.Message):
    __slots__ = ("message", "trace", "class_name", "cause")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TRACE_FIELD_NUMBER: _ClassVar[int]
    CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    message: str
    trace: str
    class_name: str
    cause: SerializedException
    def __init__(self, message: _Optional[str] = ..., trace: _Optional[str] = ..., class_name: _Optional[str] = ..., cause: _Optional[_Union[SerializedException, _Mapping]] = ...) -> None: ...

class Url(_message.Message):
    __slots__ = ("scheme", "host", "port", "file", "user_info")
    SCHEME_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    USER_INFO_FIELD_NUMBER: _ClassVar[int]
    scheme: str
    host: str
    port: int
    file: str
    user_info: str
    def __init__(self, scheme: _Optional[str] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., file: _Optional[str] = ..., user_info: _Optional[str] = ...) -> None: ...

class LocalResource(_message.Message):
    __slots__ = ("resource", "size", "timestamp", "type", "visibility", "pattern", "should_be_uploaded_to_shared_cache")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    VISIBILITY_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    SHOULD_BE_UPLOADED_TO_SHARED_CACHE_FIELD_NUMBER: _ClassVar[int]
    resource: Url
    size: int
    timestamp: int
    type: LocalResourceType
    visibility: LocalResourceVisibility
    pattern: str
    should_be_uploaded_to_shared_cache: bool
    def __init__(self, resource: _Optional[_Union[Url, _Mapping]] = ..., size: _Optional[int] = ..., timestamp: _Optional[int] = ..., type: _Optional[_Union[LocalResourceType, str]] = ..., visibility: _Optional[_Union[LocalResourceVisibility, str]] = ..., pattern: _Optional[str] = ..., should_be_uploaded_to_shared_cache: _Optional[bool] = ...) -> None: ...

class StringLocalResourceMap(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: LocalResource
    def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[LocalResource, _Mapping]] = ...) -> None: ...

class ApplicationAcl(_message.Message):
    __slots__ = ("access_type", "acl")
    ACCESS_TYPE_FIELD_NUMBER: _ClassVar[int]
    ACL_FIELD_NUMBER: _ClassVar[int]
    access_type: ApplicationAccessType
    acl: str
    def __init__(self, access_type: _Optional[_Union[ApplicationAccessType, str]] = ..., acl: _Optional[str] = ...) -> None: ...

class ContainerLaunchContext(_message.Message):
    __slots__ = ("local_resources", "tokens", "service_data", "environment", "command", "application_acls", "tokens_conf")
    LOCAL_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    SERVICE_DATA_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_ACLS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_CONF_FIELD_NUMBER: _ClassVar[int]
    local_resources: _containers.RepeatedCompositeFieldContainer[StringLocalResourceMap]
    tokens: bytes
    service_data: _containers.RepeatedCompositeFieldContainer[StringBytesMap]
    environment: _containers.RepeatedCompositeFieldContainer[StringStringMap]
    command: _containers.RepeatedScalarFieldContainer[str]
    application_acls: _containers.RepeatedCompositeFieldContainer[ApplicationAcl]
    tokens_conf: bytes
    def __init__(self, local_resources: _Optional[_Iterable[_Union[StringLocalResourceMap, _Mapping]]] = ..., tokens: _Optional[bytes] = ..., service_data: _Optional[_Iterable[_Union[StringBytesMap, _Mapping]]] = ..., environment: _Optional[_Iterable[_Union[StringStringMap, _Mapping]]] = ..., command: _Optional[_Iterable[str]] = ..., application_acls: _Optional[_Iterable[_Union[ApplicationAcl, _Mapping]]] = ..., tokens_conf: _Optional[bytes] = ...) -> None: ...

class ApplicationSubmissionContext(_message.Message):
    __slots__ = ("application_id", "application_name", "queue", "priority", "am_container_spec", "cancel_tokens_when_complete", "unmanaged_am", "max_app_attempts", "resource", "application_type", "keep_containers_across_application_attempts", "application_tags", "attempt_failures_validity_interval", "reservation_id", "node_label_expression", "am_container_resource_request")
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_NAME_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    AM_CONTAINER_SPEC_FIELD_NUMBER: _ClassVar[int]
    CANCEL_TOKENS_WHEN_COMPLETE_FIELD_NUMBER: _ClassVar[int]
    UNMANAGED_AM_FIELD_NUMBER: _ClassVar[int]
    MAX_APP_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_TYPE_FIELD_NUMBER: _ClassVar[int]
    KEEP_CONTAINERS_ACROSS_APPLICATION_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_TAGS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FAILURES_VALIDITY_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_LABEL_EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    AM_CONTAINER_RESOURCE_REQUEST_FIELD_NUMBER: _ClassVar[int]
    application_id: ApplicationId
    application_name: str
    queue: str
    priority: Priority
    am_container_spec: ContainerLaunchContext
    cancel_tokens_when_complete: bool
    unmanaged_am: bool
    max_app_attempts: int
    resource: Resource
    application_type: str
    keep_containers_across_application_attempts: bool
    application_tags: _containers.RepeatedScalarFieldContainer[str]
    attempt_failures_validity_interval: int
    reservation_id: ReservationId
    node_label_expression: str
    am_container_resource_request: _containers.RepeatedCompositeFieldContainer[ResourceRequest]
    def __init__(self, application_id: _Optional[_Union[ApplicationId, _Mapping]] = ..., application_name: _Optional[str] = ..., queue: _Optional[str] = ..., priority: _Optional[_Union[Priority, _Mapping]] = ..., am_container_spec: _Optional[_Union[ContainerLaunchContext, _Mapping]] = ..., cancel_tokens_when_complete: _Optional[bool] = ..., unmanaged_am: _Optional[bool] = ..., max_app_attempts: _Optional[int] = ..., resource: _Optional[_Union[Resource, _Mapping]] = ..., application_type: _Optional[str] = ..., keep_containers_across_application_attempts: _Optional[bool] = ..., application_tags: _Optional[_Iterable[str]] = ..., attempt_failures_validity_interval: _Optional[int] = ..., reservation_id: _Optional[_Union[ReservationId, _Mapping]] = ..., node_label_expression: _Optional[str] = ..., am_container_resource_request: _Optional[_Iterable[_Union[ResourceRequest, _Mapping]]] = ...) -> None: ...

class ApplicationResourceUsageReport(_message.Message):
    __slots__ = ("num_used_containers", "num_reserved_containers", "used_resources", "reserved_resources", "needed_resources", "memory_seconds", "vcore_seconds", "queue_usage_percentage", "cluster_usage_percentage")
    NUM_USED_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    NUM_RESERVED_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    USED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    RESERVED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    NEEDED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    VCORE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_USAGE_PERCENTAGE_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_USAGE_PERCENTAGE_FIELD_NUMBER: _ClassVar[int]
    num_used_containers: int
    num_reserved_containers: int
    used_resources: Resource
    reserved_resources: Resource
    needed_resources: Resource
    memory_seconds: int
    vcore_seconds: int
    queue_usage_percentage: float
    cluster_usage_percentage: float
    def __init__(self, num_used_containers: _Optional[int] = ..., num_reserved_containers: _Optional[int] = ..., used_resources: _Optional[_Union[Resource, _Mapping]] = ..., reserved_resources: _Optional[_Union[Resource, _Mapping]] = ..., needed_resources: _Optional[_Union[Resource, _Mapping]] = ..., memory_seconds: _Optional[int] = ..., vcore_seconds: _Optional[int] = ..., queue_usage_percentage: _Optional[float] = ..., cluster_usage_percentage: _Optional[float] = ...) -> None: ...

class ApplicationReport(_message.Message):
    __slots__ = ("application_id", "user", "queue", "name", "host", "rpc_port", "client_to_am_token", "yarn_application_state", "tracking_url", "diagnostics", "start_time", "finish_time", "final_application_status", "app_resource_usage", "original_tracking_url", "current_application_attempt_id", "progress", "application_type", "am_rm_token", "application_tags", "unmanaged_application", "priority", "launch_time", "submit_time")
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    RPC_PORT_FIELD_NUMBER: _ClassVar[int]
    CLIENT_TO_AM_TOKEN_FIELD_NUMBER: _ClassVar[int]
    YARN_APPLICATION_STATE_FIELD_NUMBER: _ClassVar[int]
    TRACKING_URL_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    FINISH_TIME_FIELD_NUMBER: _ClassVar[int]
    FINAL_APPLICATION_STATUS_FIELD_NUMBER: _ClassVar[int]
    APP_RESOURCE_USAGE_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_TRACKING_URL_FIELD_NUMBER: _ClassVar[int]
    CURRENT_APPLICATION_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_TYPE_FIELD_NUMBER: _ClassVar[int]
    AM_RM_TOKEN_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_TAGS_FIELD_NUMBER: _ClassVar[int]
    UNMANAGED_APPLICATION_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    LAUNCH_TIME_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_TIME_FIELD_NUMBER: _ClassVar[int]
    application_id: ApplicationId
    user: str
    queue: str
    name: str
    host: str
    rpc_port: int
    client_to_am_token: _ipc_pb2.Token
    yarn_application_state: YarnApplicationState
    tracking_url: str
    diagnostics: str
    start_time: int
    finish_time: int
    final_application_status: FinalApplicationStatus
    app_resource_usage: ApplicationResourceUsageReport
    original_tracking_url: str
    current_application_attempt_id: ApplicationAttemptId
    progress: float
    application_type: str
    am_rm_token: _ipc_pb2.Token
    application_tags: _containers.RepeatedScalarFieldContainer[str]
    unmanaged_application: bool
    priority: Priority
    launch_time: int
    submit_time: int
    def __init__(self, application_id: _Optional[_Union[ApplicationId, _Mapping]] = ..., user: _Optional[str] = ..., queue: _Optional[str] = ..., name: _Optional[str] = ..., host: _Optional[str] = ..., rpc_port: _Optional[int] = ..., client_to_am_token: _Optional[_Union[_ipc_pb2.Token, _Mapping]] = ..., yarn_application_state: _Optional[_Union[YarnApplicationState, str]] = ..., tracking_url: _Optional[str] = ..., diagnostics: _Optional[str] = ..., start_time: _Optional[int] = ..., finish_time: _Optional[int] = ..., final_application_status: _Optional[_Union[FinalApplicationStatus, str]] = ..., app_resource_usage: _Optional[_Union[ApplicationResourceUsageReport, _Mapping]] = ..., original_tracking_url: _Optional[str] = ..., current_application_attempt_id: _Optional[_Union[ApplicationAttemptId, _Mapping]] = ..., progress: _Optional[float] = ..., application_type: _Optional[str] = ..., am_rm_token: _Optional[_Union[_ipc_pb2.Token, _Mapping]] = ..., application_tags: _Optional[_Iterable[str]] = ..., unmanaged_application: _Optional[bool] = ..., priority: _Optional[_Union[Priority, _Mapping]] = ..., launch_time: _Optional[int] = ..., submit_time: _Optional[int] = ...) -> None: ...

class ApplicationAttemptReport(_message.Message):
    __slots__ = ("application_attempt_id", "host", "rpc_port", "tracking_url", "diagnostics", "yarn_application_attempt_state", "am_container_id", "original_tracking_url", "start_time", "finish_time")
    APPLICATION_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    RPC_PORT_FIELD_NUMBER: _ClassVar[int]
    TRACKING_URL_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    YARN_APPLICATION_ATTEMPT_STATE_FIELD_NUMBER: _ClassVar[int]
    AM_CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_TRACKING_URL_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    FINISH_TIME_FIELD_NUMBER: _ClassVar[int]
    application_attempt_id: ApplicationAttemptId
    host: str
    rpc_port: int
    tracking_url: str
    diagnostics: str
    yarn_application_attempt_state: YarnApplicationAttemptState
    am_container_id: ContainerId
    original_tracking_url: str
    start_time: int
    finish_time: int
    def __init__(self, application_attempt_id: _Optional[_Union[ApplicationAttemptId, _Mapping]] = ..., host: _Optional[str] = ..., rpc_port: _Optional[int] = ..., tracking_url: _Optional[str] = ..., diagnostics: _Optional[str] = ..., yarn_application_attempt_state: _Optional[_Union[YarnApplicationAttemptState, str]] = ..., am_container_id: _Optional[_Union[ContainerId, _Mapping]] = ..., original_tracking_url: _Optional[str] = ..., start_time: _Optional[int] = ..., finish_time: _Optional[int] = ...) -> None: ...

class YarnClusterMetrics(_message.Message):
    __slots__ = ("num_node_managers", "num_decommissioned_nms", "num_active_nms", "num_lost_nms", "num_unhealthy_nms", "num_rebooted_nms", "num_decommissioning_nms", "num_shutdown_nms")
    NUM_NODE_MANAGERS_FIELD_NUMBER: _ClassVar[int]
    NUM_DECOMMISSIONED_NMS_FIELD_NUMBER: _ClassVar[int]
    NUM_ACTIVE_NMS_FIELD_NUMBER: _ClassVar[int]
    NUM_LOST_NMS_FIELD_NUMBER: _ClassVar[int]
    NUM_UNHEALTHY_NMS_FIELD_NUMBER: _ClassVar[int]
    NUM_REBOOTED_NMS_FIELD_NUMBER: _ClassVar[int]
    NUM_DECOMMISSIONING_NMS_FIELD_NUMBER: _ClassVar[int]
    NUM_SHUTDOWN_NMS_FIELD_NUMBER: _ClassVar[int]
    num_node_managers: int
    num_decommissioned_nms: int
    num_active_nms: int
    num_lost_nms: int
    num_unhealthy_nms: int
    num_rebooted_nms: int
    num_decommissioning_nms: int
    num_shutdown_nms: int
    def __init__(self, num_node_managers: _Optional[int] = ..., num_decommissioned_nms: _Optional[int] = ..., num_active_nms: _Optional[int] = ..., num_lost_nms: _Optional[int] = ..., num_unhealthy_nms: _Optional[int] = ..., num_rebooted_nms: _Optional[int] = ..., num_decommissioning_nms: _Optional[int] = ..., num_shutdown_nms: _Optional[int] = ...) -> None: ...

class NodeReport(_message.Message):
    __slots__ = ("node_id", "http_address", "rack_name", "used", "capability", "num_containers", "node_state", "health_report", "last_health_report_time")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    HTTP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    RACK_NAME_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    NUM_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    NODE_STATE_FIELD_NUMBER: _ClassVar[int]
    HEALTH_REPORT_FIELD_NUMBER: _ClassVar[int]
    LAST_HEALTH_REPORT_TIME_FIELD_NUMBER: _ClassVar[int]
    node_id: NodeId
    http_address: str
    rack_name: str
    used: Resource
    capability: Resource
    num_containers: int
    node_state: NodeState
    health_report: str
    last_health_report_time: int
    def __init__(self, node_id: _Optional[_Union[NodeId, _Mapping]] = ..., http_address: _Optional[str] = ..., rack_name: _Optional[str] = ..., used: _Optional[_Union[Resource, _Mapping]] = ..., capability: _Optional[_Union[Resource, _Mapping]] = ..., num_containers: _Optional[int] = ..., node_state: _Optional[_Union[NodeState, str]] = ..., health_report: _Optional[str] = ..., last_health_report_time: _Optional[int] = ...) -> None: ...

class QueueInfo(_message.Message):
    __slots__ = ("queue_name", "capacity", "maximum_capacity", "current_capacity", "state", "child_queues", "applications", "weight", "queue_path")
    QUEUE_NAME_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    CURRENT_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CHILD_QUEUES_FIELD_NUMBER: _ClassVar[int]
    APPLICATIONS_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    QUEUE_PATH_FIELD_NUMBER: _ClassVar[int]
    queue_name: str
    capacity: float
    maximum_capacity: float
    current_capacity: float
    state: QueueState
    child_queues: _containers.RepeatedCompositeFieldContainer[QueueInfo]
    applications: _containers.RepeatedCompositeFieldContainer[ApplicationReport]
    weight: float
    queue_path: str
    def __init__(self, queue_name: _Optional[str] = ..., capacity: _Optional[float] = ..., maximum_capacity: _Optional[float] = ..., current_capacity: _Optional[float] = ..., state: _Optional[_Union[QueueState, str]] = ..., child_queues: _Optional[_Iterable[_Union[QueueInfo, _Mapping]]] = ..., applications: _Optional[_Iterable[_Union[ApplicationReport, _Mapping]]] = ..., weight: _Optional[float] = ..., queue_path: _Optional[str] = ...) -> None: ...

class ReservationRequest(_message.Message):
    __slots__ = ("capability", "num_containers", "concurrency", "duration")
    CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    NUM_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    capability: Resource
    num_containers: int
    concurrency: int
    duration: int
    def __init__(self, capability: _Optional[_Union[Resource, _Mapping]] = ..., num_containers: _Optional[int] = ..., concurrency: _Optional[int] = ..., duration: _Optional[int] = ...) -> None: ...

class ReservationRequests(_message.Message):
    __slots__ = ("reservation_resources", "interpreter")
    RESERVATION_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    INTERPRETER_FIELD_NUMBER: _ClassVar[int]
    reservation_resources: _containers.RepeatedCompositeFieldContainer[ReservationRequest]
    interpreter: ReservationRequestInterpreter
    def __init__(self, reservation_resources: _Optional[_Iterable[_Union[ReservationRequest, _Mapping]]] = ..., interpreter: _Optional[_Union[ReservationRequestInterpreter, str]] = ...) -> None: ...

class ReservationDefinition(_message.Message):
    __slots__ = ("reservation_requests", "arrival", "deadline", "reservation_name", "recurrence_expression", "priority")
    RESERVATION_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    ARRIVAL_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_NAME_FIELD_NUMBER: _ClassVar[int]
    RECURRENCE_EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    reservation_requests: ReservationRequests
    arrival: int
    deadline: int
    reservation_name: str
    recurrence_expression: str
    priority: Priority
    def __init__(self, reservation_requests: _Optional[_Union[ReservationRequests, _Mapping]] = ..., arrival: _Optional[int] = ..., deadline: _Optional[int] = ..., reservation_name: _Optional[str] = ..., recurrence_expression: _Optional[str] = ..., priority: _Optional[_Union[Priority, _Mapping]] = ...) -> None: ...

class ResourceAllocationRequest(_message.Message):
    __slots__ = ("start_time", "end_time", "resource")
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    start_time: int
    end_time: int
    resource: Resource
    def __init__(self, start_time: _Optional[int] = ..., end_time: _Optional[int] = ..., resource: _Optional[_Union[Resource, _Mapping]] = ...) -> None: ...

class ReservationAllocationState(_message.Message):
    __slots__ = ("reservation_definition", "allocation_requests", "start_time", "end_time", "user", "contains_gangs", "acceptance_time", "reservation_id")
    RESERVATION_DEFINITION_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    CONTAINS_GANGS_FIELD_NUMBER: _ClassVar[int]
    ACCEPTANCE_TIME_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    reservation_definition: ReservationDefinition
    allocation_requests: _containers.RepeatedCompositeFieldContainer[ResourceAllocationRequest]
    start_time: int
    end_time: int
    user: str
    contains_gangs: bool
    acceptance_time: int
    reservation_id: ReservationId
    def __init__(self, reservation_definition: _Optional[_Union[ReservationDefinition, _Mapping]] = ..., allocation_requests: _Optional[_Iterable[_Union[ResourceAllocationRequest, _Mapping]]] = ..., start_time: _Optional[int] = ..., end_time: _Optional[int] = ..., user: _Optional[str] = ..., contains_gangs: _Optional[bool] = ..., acceptance_time: _Optional[int] = ..., reservation_id: _Optional[_Union[ReservationId, _Mapping]] = ...) -> None: ...
