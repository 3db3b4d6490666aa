from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExecutionState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EXECUTION_STATE_UNSPECIFIED: _ClassVar[ExecutionState]
    CONTAINER_NEW: _ClassVar[ExecutionState]
    CONTAINER_RUNNING: _ClassVar[ExecutionState]
    CONTAINER_COMPLETE: _ClassVar[ExecutionState]

class NodeAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NODE_ACTION_NORMAL: _ClassVar[NodeAction]
    NODE_ACTION_RESYNC: _ClassVar[NodeAction]
    NODE_ACTION_SHUTDOWN: _ClassVar[NodeAction]

class AskType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DEFAULT: _ClassVar[AskType]
    ALTRUISTIC: _ClassVar[AskType]

class AMCommand(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AM_COMMAND_NONE: _ClassVar[AMCommand]
    AM_RESYNC: _ClassVar[AMCommand]
    AM_SHUTDOWN: _ClassVar[AMCommand]

class FinalStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FINAL_STATUS_UNDEFINED: _ClassVar[FinalStatus]
    SUCCEEDED: _ClassVar[FinalStatus]
    FAILED: _ClassVar[FinalStatus]
    KILLED: _ClassVar[FinalStatus]
EXECUTION_STATE_UNSPECIFIED: ExecutionState
CONTAINER_NEW: ExecutionState
CONTAINER_RUNNING: ExecutionState
CONTAINER_COMPLETE: ExecutionState
NODE_ACTION_NORMAL: NodeAction
NODE_ACTION_RESYNC: NodeAction
NODE_ACTION_SHUTDOWN: NodeAction
DEFAULT: AskType
ALTRUISTIC: AskType
AM_COMMAND_NONE: AMCommand
AM_RESYNC: AMCommand
AM_SHUTDOWN: AMCommand
FINAL_STATUS_UNDEFINED: FinalStatus
SUCCEEDED: FinalStatus
FAILED: FinalStatus
KILLED: FinalStatus

class Resource(_message.Message):
    __slots__ = ("values",)
    class ValuesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.ScalarMap[str, int]
    def __init__(self, values: _Optional[_Mapping[str, int]] = ...) -> None: ...

class NodeId(_message.Message):
    __slots__ = ("host", "port")
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    host: str
    port: int
    def __init__(self, host: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class ContainerStatus(_message.Message):
    __slots__ = ("container_id", "state", "exit_status", "diagnostics", "start_time_ms", "finish_time_ms")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    EXIT_STATUS_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    FINISH_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    state: ExecutionState
    exit_status: int
    diagnostics: str
    start_time_ms: int
    finish_time_ms: int
    def __init__(self, container_id: _Optional[str] = ..., state: _Optional[_Union[ExecutionState, str]] = ..., exit_status: _Optional[int] = ..., diagnostics: _Optional[str] = ..., start_time_ms: _Optional[int] = ..., finish_time_ms: _Optional[int] = ...) -> None: ...

class Container(_message.Message):
    __slots__ = ("container_id", "node_id", "node_http_address", "resource", "priority", "allocation_request_id", "container_token", "ask_type", "from_leftover")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_HTTP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    FROM_LEFTOVER_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    node_id: NodeId
    node_http_address: str
    resource: Resource
    priority: int
    allocation_request_id: int
    container_token: str
    ask_type: AskType
    from_leftover: bool
    def __init__(self, container_id: _Optional[str] = ..., node_id: _Optional[_Union[NodeId, _Mapping]] = ..., node_http_address: _Optional[str] = ..., resource: _Optional[_Union[Resource, _Mapping]] = ..., priority: _Optional[int] = ..., allocation_request_id: _Optional[int] = ..., container_token: _Optional[str] = ..., ask_type: _Optional[_Union[AskType, str]] = ..., from_leftover: _Optional[bool] = ...) -> None: ...

class LocalResource(_message.Message):
    __slots__ = ("url", "type")
    URL_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    url: str
    type: str
    def __init__(self, url: _Optional[str] = ..., type: _Optional[str] = ...) -> None: ...

class ContainerLaunchContext(_message.Message):
    __slots__ = ("commands", "environment", "local_resources")
    class EnvironmentEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class LocalResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: LocalResource
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[LocalResource, _Mapping]] = ...) -> None: ...
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    LOCAL_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    commands: _containers.RepeatedScalarFieldContainer[str]
    environment: _containers.ScalarMap[str, str]
    local_resources: _containers.MessageMap[str, LocalResource]
    def __init__(self, commands: _Optional[_Iterable[str]] = ..., environment: _Optional[_Mapping[str, str]] = ..., local_resources: _Optional[_Mapping[str, LocalResource]] = ...) -> None: ...

class NodeHealth(_message.Message):
    __slots__ = ("healthy", "health_report", "last_health_report_time_ms")
    HEALTHY_FIELD_NUMBER: _ClassVar[int]
    HEALTH_REPORT_FIELD_NUMBER: _ClassVar[int]
    LAST_HEALTH_REPORT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    healthy: bool
    health_report: str
    last_health_report_time_ms: int
    def __init__(self, healthy: _Optional[bool] = ..., health_report: _Optional[str] = ..., last_health_report_time_ms: _Optional[int] = ...) -> None: ...

class RegisterNodeRequest(_message.Message):
    __slots__ = ("node_id", "http_address", "capability", "rack", "container_statuses", "version", "ipc_port")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    HTTP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    RACK_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_STATUSES_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    IPC_PORT_FIELD_NUMBER: _ClassVar[int]
    node_id: NodeId
    http_address: str
    capability: Resource
    rack: str
    container_statuses: _containers.RepeatedCompositeFieldContainer[ContainerStatus]
    version: str
    ipc_port: int
    def __init__(self, node_id: _Optional[_Union[NodeId, _Mapping]] = ..., http_address: _Optional[str] = ..., capability: _Optional[_Union[Resource, _Mapping]] = ..., rack: _Optional[str] = ..., container_statuses: _Optional[_Iterable[_Union[ContainerStatus, _Mapping]]] = ..., version: _Optional[str] = ..., ipc_port: _Optional[int] = ...) -> None: ...

class TokenKey(_message.Message):
    __slots__ = ("key_id", "key")
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    key_id: int
    key: bytes
    def __init__(self, key_id: _Optional[int] = ..., key: _Optional[bytes] = ...) -> None: ...

class RegisterNodeResponse(_message.Message):
    __slots__ = ("action", "diagnostics", "container_token_key", "key_id", "heartbeat_interval_ms", "rm_identifier", "nm_expiry_ms", "container_token_keys", "reads_verifier")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_TOKEN_KEY_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    RM_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    NM_EXPIRY_MS_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_TOKEN_KEYS_FIELD_NUMBER: _ClassVar[int]
    READS_VERIFIER_FIELD_NUMBER: _ClassVar[int]
    action: NodeAction
    diagnostics: str
    container_token_key: bytes
    key_id: int
    heartbeat_interval_ms: int
    rm_identifier: int
    nm_expiry_ms: int
    container_token_keys: _containers.RepeatedCompositeFieldContainer[TokenKey]
    reads_verifier: bytes
    def __init__(self, action: _Optional[_Union[NodeAction, str]] = ..., diagnostics: _Optional[str] = ..., container_token_key: _Optional[bytes] = ..., key_id: _Optional[int] = ..., heartbeat_interval_ms: _Optional[int] = ..., rm_identifier: _Optional[int] = ..., nm_expiry_ms: _Optional[int] = ..., container_token_keys: _Optional[_Iterable[_Union[TokenKey, _Mapping]]] = ..., reads_verifier: _Optional[bytes] = ...) -> None: ...

class NodeHeartbeatRequest(_message.Message):
    __slots__ = ("node_id", "response_id", "container_statuses", "health", "used")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_ID_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_STATUSES_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    node_id: NodeId
    response_id: int
    container_statuses: _containers.RepeatedCompositeFieldContainer[ContainerStatus]
    health: NodeHealth
    used: Resource
    def __init__(self, node_id: _Optional[_Union[NodeId, _Mapping]] = ..., response_id: _Optional[int] = ..., container_statuses: _Optional[_Iterable[_Union[ContainerStatus, _Mapping]]] = ..., health: _Optional[_Union[NodeHealth, _Mapping]] = ..., used: _Optional[_Union[Resource, _Mapping]] = ...) -> None: ...

class NodeHeartbeatResponse(_message.Message):
    __slots__ = ("response_id", "action", "containers_to_cleanup", "applications_to_cleanup", "next_heartbeat_interval_ms", "diagnostics", "container_token_keys", "out_of_band_gap_ms")
    RESPONSE_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_TO_CLEANUP_FIELD_NUMBER: _ClassVar[int]
    APPLICATIONS_TO_CLEANUP_FIELD_NUMBER: _ClassVar[int]
    NEXT_HEARTBEAT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_TOKEN_KEYS_FIELD_NUMBER: _ClassVar[int]
    OUT_OF_BAND_GAP_MS_FIELD_NUMBER: _ClassVar[int]
    response_id: int
    action: NodeAction
    containers_to_cleanup: _containers.RepeatedScalarFieldContainer[str]
    applications_to_cleanup: _containers.RepeatedScalarFieldContainer[str]
    next_heartbeat_interval_ms: int
    diagnostics: str
    container_token_keys: _containers.RepeatedCompositeFieldContainer[TokenKey]
    out_of_band_gap_ms: int
    def __init__(self, response_id: _Optional[int] = ..., action: _Optional[_Union[NodeAction, str]] = ..., containers_to_cleanup: _Optional[_Iterable[str]] = ..., applications_to_cleanup: _Optional[_Iterable[str]] = ..., next_heartbeat_interval_ms: _Optional[int] = ..., diagnostics: _Optional[str] = ..., container_token_keys: _Optional[_Iterable[_Union[TokenKey, _Mapping]]] = ..., out_of_band_gap_ms: _Optional[int] = ...) -> None: ...

class UnregisterNodeRequest(_message.Message):
    __slots__ = ("node_id",)
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    node_id: NodeId
    def __init__(self, node_id: _Optional[_Union[NodeId, _Mapping]] = ...) -> None: ...

class UnregisterNodeResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ResourceAsk(_message.Message):
    __slots__ = ("allocation_request_id", "priority", "capability", "num_containers", "nodes", "racks", "relax_locality", "ask_type", "remaining_work_s", "stage")
    ALLOCATION_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    NUM_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    RACKS_FIELD_NUMBER: _ClassVar[int]
    RELAX_LOCALITY_FIELD_NUMBER: _ClassVar[int]
    ASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    REMAINING_WORK_S_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    allocation_request_id: int
    priority: int
    capability: Resource
    num_containers: int
    nodes: _containers.RepeatedScalarFieldContainer[str]
    racks: _containers.RepeatedScalarFieldContainer[str]
    relax_locality: bool
    ask_type: AskType
    remaining_work_s: float
    stage: str
    def __init__(self, allocation_request_id: _Optional[int] = ..., priority: _Optional[int] = ..., capability: _Optional[_Union[Resource, _Mapping]] = ..., num_containers: _Optional[int] = ..., nodes: _Optional[_Iterable[str]] = ..., racks: _Optional[_Iterable[str]] = ..., relax_locality: _Optional[bool] = ..., ask_type: _Optional[_Union[AskType, str]] = ..., remaining_work_s: _Optional[float] = ..., stage: _Optional[str] = ...) -> None: ...

class RegisterApplicationMasterRequest(_message.Message):
    __slots__ = ("host", "rpc_port", "tracking_url")
    HOST_FIELD_NUMBER: _ClassVar[int]
    RPC_PORT_FIELD_NUMBER: _ClassVar[int]
    TRACKING_URL_FIELD_NUMBER: _ClassVar[int]
    host: str
    rpc_port: int
    tracking_url: str
    def __init__(self, host: _Optional[str] = ..., rpc_port: _Optional[int] = ..., tracking_url: _Optional[str] = ...) -> None: ...

class RegisterApplicationMasterResponse(_message.Message):
    __slots__ = ("maximum_capability", "queue", "application_id", "attempt_id", "containers_from_previous_attempts", "checkpoint", "profile")
    MAXIMUM_CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_FROM_PREVIOUS_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    maximum_capability: Resource
    queue: str
    application_id: str
    attempt_id: str
    containers_from_previous_attempts: _containers.RepeatedCompositeFieldContainer[Container]
    checkpoint: str
    profile: JobProfile
    def __init__(self, maximum_capability: _Optional[_Union[Resource, _Mapping]] = ..., queue: _Optional[str] = ..., application_id: _Optional[str] = ..., attempt_id: _Optional[str] = ..., containers_from_previous_attempts: _Optional[_Iterable[_Union[Container, _Mapping]]] = ..., checkpoint: _Optional[str] = ..., profile: _Optional[_Union[JobProfile, _Mapping]] = ...) -> None: ...

class StageReport(_message.Message):
    __slots__ = ("name", "tasks", "run_s", "queue_s", "init_s", "attempts", "failed_attempts", "parents", "container")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    RUN_S_FIELD_NUMBER: _ClassVar[int]
    QUEUE_S_FIELD_NUMBER: _ClassVar[int]
    INIT_S_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    FAILED_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    PARENTS_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    name: str
    tasks: int
    run_s: _containers.RepeatedScalarFieldContainer[float]
    queue_s: _containers.RepeatedScalarFieldContainer[float]
    init_s: _containers.RepeatedScalarFieldContainer[float]
    attempts: int
    failed_attempts: int
    parents: _containers.RepeatedScalarFieldContainer[str]
    container: Resource
    def __init__(self, name: _Optional[str] = ..., tasks: _Optional[int] = ..., run_s: _Optional[_Iterable[float]] = ..., queue_s: _Optional[_Iterable[float]] = ..., init_s: _Optional[_Iterable[float]] = ..., attempts: _Optional[int] = ..., failed_attempts: _Optional[int] = ..., parents: _Optional[_Iterable[str]] = ..., container: _Optional[_Union[Resource, _Mapping]] = ...) -> None: ...

class StageProfile(_message.Message):
    __slots__ = ("name", "tasks", "run_s", "init_s", "queue_s", "failure_p", "parents", "container")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    RUN_S_FIELD_NUMBER: _ClassVar[int]
    INIT_S_FIELD_NUMBER: _ClassVar[int]
    QUEUE_S_FIELD_NUMBER: _ClassVar[int]
    FAILURE_P_FIELD_NUMBER: _ClassVar[int]
    PARENTS_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    name: str
    tasks: int
    run_s: _containers.RepeatedScalarFieldContainer[float]
    init_s: _containers.RepeatedScalarFieldContainer[float]
    queue_s: float
    failure_p: float
    parents: _containers.RepeatedScalarFieldContainer[str]
    container: Resource
    def __init__(self, name: _Optional[str] = ..., tasks: _Optional[int] = ..., run_s: _Optional[_Iterable[float]] = ..., init_s: _Optional[_Iterable[float]] = ..., queue_s: _Optional[float] = ..., failure_p: _Optional[float] = ..., parents: _Optional[_Iterable[str]] = ..., container: _Optional[_Union[Resource, _Mapping]] = ...) -> None: ...

class JobProfile(_message.Message):
    __slots__ = ("job", "stages", "runs")
    JOB_FIELD_NUMBER: _ClassVar[int]
    STAGES_FIELD_NUMBER: _ClassVar[int]
    RUNS_FIELD_NUMBER: _ClassVar[int]
    job: str
    stages: _containers.RepeatedCompositeFieldContainer[StageProfile]
    runs: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, job: _Optional[str] = ..., stages: _Optional[_Iterable[_Union[StageProfile, _Mapping]]] = ..., runs: _Optional[_Iterable[str]] = ...) -> None: ...

class PreemptionNotice(_message.Message):
    __slots__ = ("container_ids",)
    CONTAINER_IDS_FIELD_NUMBER: _ClassVar[int]
    container_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, container_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class NMToken(_message.Message):
    __slots__ = ("node_id", "token")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    node_id: NodeId
    token: str
    def __init__(self, node_id: _Optional[_Union[NodeId, _Mapping]] = ..., token: _Optional[str] = ...) -> None: ...

class AllocateRequest(_message.Message):
    __slots__ = ("response_id", "asks", "releases", "progress", "blacklist_additions", "blacklist_removals", "size", "guarantee", "checkpoint", "control", "model_build_s")
    RESPONSE_ID_FIELD_NUMBER: _ClassVar[int]
    ASKS_FIELD_NUMBER: _ClassVar[int]
    RELEASES_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    BLACKLIST_ADDITIONS_FIELD_NUMBER: _ClassVar[int]
    BLACKLIST_REMOVALS_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    GUARANTEE_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    MODEL_BUILD_S_FIELD_NUMBER: _ClassVar[int]
    response_id: int
    asks: _containers.RepeatedCompositeFieldContainer[ResourceAsk]
    releases: _containers.RepeatedScalarFieldContainer[str]
    progress: float
    blacklist_additions: _containers.RepeatedScalarFieldContainer[str]
    blacklist_removals: _containers.RepeatedScalarFieldContainer[str]
    size: SizeReport
    guarantee: Resource
    checkpoint: str
    control: _containers.RepeatedCompositeFieldContainer[ControlStep]
    model_build_s: float
    def __init__(self, response_id: _Optional[int] = ..., asks: _Optional[_Iterable[_Union[ResourceAsk, _Mapping]]] = ..., releases: _Optional[_Iterable[str]] = ..., progress: _Optional[float] = ..., blacklist_additions: _Optional[_Iterable[str]] = ..., blacklist_removals: _Optional[_Iterable[str]] = ..., size: _Optional[_Union[SizeReport, _Mapping]] = ..., guarantee: _Optional[_Union[Resource, _Mapping]] = ..., checkpoint: _Optional[str] = ..., control: _Optional[_Iterable[_Union[ControlStep, _Mapping]]] = ..., model_build_s: _Optional[float] = ...) -> None: ...

class ControlStep(_message.Message):
    __slots__ = ("age_s", "progress", "raw_units", "smoothed_units", "requested_units", "finish_in_s", "status", "held", "pace")
    AGE_S_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    RAW_UNITS_FIELD_NUMBER: _ClassVar[int]
    SMOOTHED_UNITS_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_UNITS_FIELD_NUMBER: _ClassVar[int]
    FINISH_IN_S_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    HELD_FIELD_NUMBER: _ClassVar[int]
    PACE_FIELD_NUMBER: _ClassVar[int]
    age_s: float
    progress: float
    raw_units: int
    smoothed_units: float
    requested_units: int
    finish_in_s: float
    status: str
    held: bool
    pace: float
    def __init__(self, age_s: _Optional[float] = ..., progress: _Optional[float] = ..., raw_units: _Optional[int] = ..., smoothed_units: _Optional[float] = ..., requested_units: _Optional[int] = ..., finish_in_s: _Optional[float] = ..., status: _Optional[str] = ..., held: _Optional[bool] = ..., pace: _Optional[float] = ...) -> None: ...

class SizeReport(_message.Message):
    __slots__ = ("remaining_s", "total_s")
    REMAINING_S_FIELD_NUMBER: _ClassVar[int]
    TOTAL_S_FIELD_NUMBER: _ClassVar[int]
    remaining_s: float
    total_s: float
    def __init__(self, remaining_s: _Optional[float] = ..., total_s: _Optional[float] = ...) -> None: ...

class NodeReport(_message.Message):
    __slots__ = ("node_id", "http_address", "rack", "state", "capability", "used", "num_containers", "health_report", "last_health_update_ms")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    HTTP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    RACK_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    NUM_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    HEALTH_REPORT_FIELD_NUMBER: _ClassVar[int]
    LAST_HEALTH_UPDATE_MS_FIELD_NUMBER: _ClassVar[int]
    node_id: NodeId
    http_address: str
    rack: str
    state: str
    capability: Resource
    used: Resource
    num_containers: int
    health_report: str
    last_health_update_ms: int
    def __init__(self, node_id: _Optional[_Union[NodeId, _Mapping]] = ..., http_address: _Optional[str] = ..., rack: _Optional[str] = ..., state: _Optional[str] = ..., capability: _Optional[_Union[Resource, _Mapping]] = ..., used: _Optional[_Union[Resource, _Mapping]] = ..., num_containers: _Optional[int] = ..., health_report: _Optional[str] = ..., last_health_update_ms: _Optional[int] = ...) -> None: ...

class AllocateResponse(_message.Message):
    __slots__ = ("response_id", "am_command", "allocated_containers", "completed_container_statuses", "fair_share", "available_resources", "updated_nodes", "preemption", "num_cluster_nodes", "nm_tokens", "deadline_in_s", "granted_guarantee", "guarantee_ceiling")
    RESPONSE_ID_FIELD_NUMBER: _ClassVar[int]
    AM_COMMAND_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_CONTAINER_STATUSES_FIELD_NUMBER: _ClassVar[int]
    FAIR_SHARE_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    UPDATED_NODES_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_FIELD_NUMBER: _ClassVar[int]
    NUM_CLUSTER_NODES_FIELD_NUMBER: _ClassVar[int]
    NM_TOKENS_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_IN_S_FIELD_NUMBER: _ClassVar[int]
    GRANTED_GUARANTEE_FIELD_NUMBER: _ClassVar[int]
    GUARANTEE_CEILING_FIELD_NUMBER: _ClassVar[int]
    response_id: int
    am_command: AMCommand
    allocated_containers: _containers.RepeatedCompositeFieldContainer[Container]
    completed_container_statuses: _containers.RepeatedCompositeFieldContainer[ContainerStatus]
    fair_share: Resource
    available_resources: Resource
    updated_nodes: _containers.RepeatedCompositeFieldContainer[NodeReport]
    preemption: PreemptionNotice
    num_cluster_nodes: int
    nm_tokens: _containers.RepeatedCompositeFieldContainer[NMToken]
    deadline_in_s: float
    granted_guarantee: Resource
    guarantee_ceiling: Resource
    def __init__(self, response_id: _Optional[int] = ..., am_command: _Optional[_Union[AMCommand, str]] = ..., allocated_containers: _Optional[_Iterable[_Union[Container, _Mapping]]] = ..., completed_container_statuses: _Optional[_Iterable[_Union[ContainerStatus, _Mapping]]] = ..., fair_share: _Optional[_Union[Resource, _Mapping]] = ..., available_resources: _Optional[_Union[Resource, _Mapping]] = ..., updated_nodes: _Optional[_Iterable[_Union[NodeReport, _Mapping]]] = ..., preemption: _Optional[_Union[PreemptionNotice, _Mapping]] = ..., num_cluster_nodes: _Optional[int] = ..., nm_tokens: _Optional[_Iterable[_Union[NMToken, _Mapping]]] = ..., deadline_in_s: _Optional[float] = ..., granted_guarantee: _Optional[_Union[Resource, _Mapping]] = ..., guarantee_ceiling: _Optional[_Union[Resource, _Mapping]] = ...) -> None: ...

class FinishApplicationMasterRequest(_message.Message):
    __slots__ = ("final_status", "diagnostics", "tracking_url", "stages")
    FINAL_STATUS_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    TRACKING_URL_FIELD_NUMBER: _ClassVar[int]
    STAGES_FIELD_NUMBER: _ClassVar[int]
    final_status: FinalStatus
    diagnostics: str
    tracking_url: str
    stages: _containers.RepeatedCompositeFieldContainer[StageReport]
    def __init__(self, final_status: _Optional[_Union[FinalStatus, str]] = ..., diagnostics: _Optional[str] = ..., tracking_url: _Optional[str] = ..., stages: _Optional[_Iterable[_Union[StageReport, _Mapping]]] = ...) -> None: ...

class FinishApplicationMasterResponse(_message.Message):
    __slots__ = ("is_unregistered",)
    IS_UNREGISTERED_FIELD_NUMBER: _ClassVar[int]
    is_unregistered: bool
    def __init__(self, is_unregistered: _Optional[bool] = ...) -> None: ...

class GetNewApplicationRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetNewApplicationResponse(_message.Message):
    __slots__ = ("application_id", "maximum_capability")
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    application_id: str
    maximum_capability: Resource
    def __init__(self, application_id: _Optional[str] = ..., maximum_capability: _Optional[_Union[Resource, _Mapping]] = ...) -> None: ...

class ApplicationSubmissionContext(_message.Message):
    __slots__ = ("application_id", "name", "queue", "user", "application_type", "priority", "am_resource", "am_container_spec", "max_app_attempts", "tags", "unmanaged_am", "job_spec_json", "inputs", "outputs", "reservation_id", "deadline", "quote_id", "max_price", "keep_containers_across_application_attempts", "plan_token")
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_TYPE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    AM_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    AM_CONTAINER_SPEC_FIELD_NUMBER: _ClassVar[int]
    MAX_APP_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    UNMANAGED_AM_FIELD_NUMBER: _ClassVar[int]
    JOB_SPEC_JSON_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    QUOTE_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_PRICE_FIELD_NUMBER: _ClassVar[int]
    KEEP_CONTAINERS_ACROSS_APPLICATION_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    PLAN_TOKEN_FIELD_NUMBER: _ClassVar[int]
    application_id: str
    name: str
    queue: str
    user: str
    application_type: str
    priority: int
    am_resource: Resource
    am_container_spec: ContainerLaunchContext
    max_app_attempts: int
    tags: _containers.RepeatedScalarFieldContainer[str]
    unmanaged_am: bool
    job_spec_json: str
    inputs: _containers.RepeatedScalarFieldContainer[str]
    outputs: _containers.RepeatedScalarFieldContainer[str]
    reservation_id: str
    deadline: float
    quote_id: str
    max_price: float
    keep_containers_across_application_attempts: bool
    plan_token: str
    def __init__(self, application_id: _Optional[str] = ..., name: _Optional[str] = ..., queue: _Optional[str] = ..., user: _Optional[str] = ..., application_type: _Optional[str] = ..., priority: _Optional[int] = ..., am_resource: _Optional[_Union[Resource, _Mapping]] = ..., am_container_spec: _Optional[_Union[ContainerLaunchContext, _Mapping]] = ..., max_app_attempts: _Optional[int] = ..., tags: _Optional[_Iterable[str]] = ..., unmanaged_am: _Optional[bool] = ..., job_spec_json: _Optional[str] = ..., inputs: _Optional[_Iterable[str]] = ..., outputs: _Optional[_Iterable[str]] = ..., reservation_id: _Optional[str] = ..., deadline: _Optional[float] = ..., quote_id: _Optional[str] = ..., max_price: _Optional[float] = ..., keep_containers_across_application_attempts: _Optional[bool] = ..., plan_token: _Optional[str] = ...) -> None: ...

class QuoteDeadlineRequest(_message.Message):
    __slots__ = ("queue", "user", "job_spec_json", "name", "application_type", "tags")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    JOB_SPEC_JSON_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_TYPE_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    queue: str
    user: str
    job_spec_json: str
    name: str
    application_type: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, queue: _Optional[str] = ..., user: _Optional[str] = ..., job_spec_json: _Optional[str] = ..., name: _Optional[str] = ..., application_type: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ...) -> None: ...

class PricePoint(_message.Message):
    __slots__ = ("deadline", "price")
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    PRICE_FIELD_NUMBER: _ClassVar[int]
    deadline: float
    price: float
    def __init__(self, deadline: _Optional[float] = ..., price: _Optional[float] = ...) -> None: ...

class QuoteDeadlineResponse(_message.Message):
    __slots__ = ("quote_id", "expires", "mean", "stddev", "pi_upper", "z", "method", "runs", "critical_path", "earliest_finish", "curve")
    QUOTE_ID_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_FIELD_NUMBER: _ClassVar[int]
    MEAN_FIELD_NUMBER: _ClassVar[int]
    STDDEV_FIELD_NUMBER: _ClassVar[int]
    PI_UPPER_FIELD_NUMBER: _ClassVar[int]
    Z_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    RUNS_FIELD_NUMBER: _ClassVar[int]
    CRITICAL_PATH_FIELD_NUMBER: _ClassVar[int]
    EARLIEST_FINISH_FIELD_NUMBER: _ClassVar[int]
    CURVE_FIELD_NUMBER: _ClassVar[int]
    quote_id: str
    expires: float
    mean: float
    stddev: float
    pi_upper: float
    z: float
    method: str
    runs: int
    critical_path: float
    earliest_finish: float
    curve: _containers.RepeatedCompositeFieldContainer[PricePoint]
    def __init__(self, quote_id: _Optional[str] = ..., expires: _Optional[float] = ..., mean: _Optional[float] = ..., stddev: _Optional[float] = ..., pi_upper: _Optional[float] = ..., z: _Optional[float] = ..., method: _Optional[str] = ..., runs: _Optional[int] = ..., critical_path: _Optional[float] = ..., earliest_finish: _Optional[float] = ..., curve: _Optional[_Iterable[_Union[PricePoint, _Mapping]]] = ...) -> None: ...

class SubmitApplicationRequest(_message.Message):
    __slots__ = ("context",)
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    context: ApplicationSubmissionContext
    def __init__(self, context: _Optional[_Union[ApplicationSubmissionContext, _Mapping]] = ...) -> None: ...

class SubmitApplicationResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ApplicationReport(_message.Message):
    __slots__ = ("application_id", "current_attempt_id", "user", "queue", "name", "host", "rpc_port", "state", "final_status", "diagnostics", "tracking_url", "start_time_ms", "finish_time_ms", "progress", "application_type", "tags", "priority", "used", "fair_share", "dominant_share", "running_containers", "pending_asks", "am_container_id", "am_node_http_address", "submit_time_ms", "launch_time_ms", "attempts", "memory_seconds", "vcore_seconds", "pending_default_asks", "pending_altruistic_asks", "leftover_containers", "deadline", "stages", "rest_json")
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    CURRENT_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    RPC_PORT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    FINAL_STATUS_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    TRACKING_URL_FIELD_NUMBER: _ClassVar[int]
    START_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    FINISH_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_TYPE_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    FAIR_SHARE_FIELD_NUMBER: _ClassVar[int]
    DOMINANT_SHARE_FIELD_NUMBER: _ClassVar[int]
    RUNNING_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    PENDING_ASKS_FIELD_NUMBER: _ClassVar[int]
    AM_CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    AM_NODE_HTTP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    LAUNCH_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    VCORE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PENDING_DEFAULT_ASKS_FIELD_NUMBER: _ClassVar[int]
    PENDING_ALTRUISTIC_ASKS_FIELD_NUMBER: _ClassVar[int]
    LEFTOVER_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    STAGES_FIELD_NUMBER: _ClassVar[int]
    REST_JSON_FIELD_NUMBER: _ClassVar[int]
    application_id: str
    current_attempt_id: str
    user: str
    queue: str
    name: str
    host: str
    rpc_port: int
    state: str
    final_status: str
    diagnostics: str
    tracking_url: str
    start_time_ms: int
    finish_time_ms: int
    progress: float
    application_type: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    priority: int
    used: Resource
    fair_share: Resource
    dominant_share: float
    running_containers: int
    pending_asks: int
    am_container_id: str
    am_node_http_address: str
    submit_time_ms: int
    launch_time_ms: int
    attempts: int
    memory_seconds: int
    vcore_seconds: int
    pending_default_asks: int
    pending_altruistic_asks: int
    leftover_containers: int
    deadline: DeadlineReport
    stages: _containers.RepeatedCompositeFieldContainer[StageProgress]
    rest_json: str
    def __init__(self, application_id: _Optional[str] = ..., current_attempt_id: _Optional[str] = ..., user: _Optional[str] = ..., queue: _Optional[str] = ..., name: _Optional[str] = ..., host: _Optional[str] = ..., rpc_port: _Optional[int] = ..., state: _Optional[str] = ..., final_status: _Optional[str] = ..., diagnostics: _Optional[str] = ..., tracking_url: _Optional[str] = ..., start_time_ms: _Optional[int] = ..., finish_time_ms: _Optional[int] = ..., progress: _Optional[float] = ..., application_type: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., priority: _Optional[int] = ..., used: _Optional[_Union[Resource, _Mapping]] = ..., fair_share: _Optional[_Union[Resource, _Mapping]] = ..., dominant_share: _Optional[float] = ..., running_containers: _Optional[int] = ..., pending_asks: _Optional[int] = ..., am_container_id: _Optional[str] = ..., am_node_http_address: _Optional[str] = ..., submit_time_ms: _Optional[int] = ..., launch_time_ms: _Optional[int] = ..., attempts: _Optional[int] = ..., memory_seconds: _Optional[int] = ..., vcore_seconds: _Optional[int] = ..., pending_default_asks: _Optional[int] = ..., pending_altruistic_asks: _Optional[int] = ..., leftover_containers: _Optional[int] = ..., deadline: _Optional[_Union[DeadlineReport, _Mapping]] = ..., stages: _Optional[_Iterable[_Union[StageProgress, _Mapping]]] = ..., rest_json: _Optional[str] = ...) -> None: ...

class StageProgress(_message.Message):
    __slots__ = ("name", "tasks", "done", "running", "waiting", "failed", "state")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    name: str
    tasks: int
    done: int
    running: int
    waiting: int
    failed: int
    state: str
    def __init__(self, name: _Optional[str] = ..., tasks: _Optional[int] = ..., done: _Optional[int] = ..., running: _Optional[int] = ..., waiting: _Optional[int] = ..., failed: _Optional[int] = ..., state: _Optional[str] = ...) -> None: ...

class DeadlineReport(_message.Message):
    __slots__ = ("deadline", "price", "earliest_finish", "mean", "stddev", "pi_upper", "method", "runs", "remaining_work", "laxity", "status")
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    PRICE_FIELD_NUMBER: _ClassVar[int]
    EARLIEST_FINISH_FIELD_NUMBER: _ClassVar[int]
    MEAN_FIELD_NUMBER: _ClassVar[int]
    STDDEV_FIELD_NUMBER: _ClassVar[int]
    PI_UPPER_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    RUNS_FIELD_NUMBER: _ClassVar[int]
    REMAINING_WORK_FIELD_NUMBER: _ClassVar[int]
    LAXITY_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    deadline: float
    price: float
    earliest_finish: float
    mean: float
    stddev: float
    pi_upper: float
    method: str
    runs: int
    remaining_work: float
    laxity: float
    status: str
    def __init__(self, deadline: _Optional[float] = ..., price: _Optional[float] = ..., earliest_finish: _Optional[float] = ..., mean: _Optional[float] = ..., stddev: _Optional[float] = ..., pi_upper: _Optional[float] = ..., method: _Optional[str] = ..., runs: _Optional[int] = ..., remaining_work: _Optional[float] = ..., laxity: _Optional[float] = ..., status: _Optional[str] = ...) -> None: ...

class GetApplicationReportRequest(_message.Message):
    __slots__ = ("application_id", "rest_shape")
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    REST_SHAPE_FIELD_NUMBER: _ClassVar[int]
    application_id: str
    rest_shape: bool
    def __init__(self, application_id: _Optional[str] = ..., rest_shape: _Optional[bool] = ...) -> None: ...

class GetApplicationReportResponse(_message.Message):
    __slots__ = ("report",)
    REPORT_FIELD_NUMBER: _ClassVar[int]
    report: ApplicationReport
    def __init__(self, report: _Optional[_Union[ApplicationReport, _Mapping]] = ...) -> None: ...

class GetApplicationsRequest(_message.Message):
    __slots__ = ("states", "queue", "user", "limit", "rest_shape")
    STATES_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    REST_SHAPE_FIELD_NUMBER: _ClassVar[int]
    states: _containers.RepeatedScalarFieldContainer[str]
    queue: str
    user: str
    limit: int
    rest_shape: bool
    def __init__(self, states: _Optional[_Iterable[str]] = ..., queue: _Optional[str] = ..., user: _Optional[str] = ..., limit: _Optional[int] = ..., rest_shape: _Optional[bool] = ...) -> None: ...

class GetApplicationsResponse(_message.Message):
    __slots__ = ("applications",)
    APPLICATIONS_FIELD_NUMBER: _ClassVar[int]
    applications: _containers.RepeatedCompositeFieldContainer[ApplicationReport]
    def __init__(self, applications: _Optional[_Iterable[_Union[ApplicationReport, _Mapping]]] = ...) -> None: ...

class ApplicationAttemptReport(_message.Message):
    __slots__ = ("attempt_id", "state", "am_container_id", "node_id", "node_http_address", "start_time_ms", "finish_time_ms", "diagnostics")
    ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    AM_CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_HTTP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    FINISH_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    attempt_id: str
    state: str
    am_container_id: str
    node_id: str
    node_http_address: str
    start_time_ms: int
    finish_time_ms: int
    diagnostics: str
    def __init__(self, attempt_id: _Optional[str] = ..., state: _Optional[str] = ..., am_container_id: _Optional[str] = ..., node_id: _Optional[str] = ..., node_http_address: _Optional[str] = ..., start_time_ms: _Optional[int] = ..., finish_time_ms: _Optional[int] = ..., diagnostics: _Optional[str] = ...) -> None: ...

class GetApplicationAttemptsRequest(_message.Message):
    __slots__ = ("application_id",)
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    application_id: str
    def __init__(self, application_id: _Optional[str] = ...) -> None: ...

class GetApplicationAttemptsResponse(_message.Message):
    __slots__ = ("attempts",)
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    attempts: _containers.RepeatedCompositeFieldContainer[ApplicationAttemptReport]
    def __init__(self, attempts: _Optional[_Iterable[_Union[ApplicationAttemptReport, _Mapping]]] = ...) -> None: ...

class ContainerReport(_message.Message):
    __slots__ = ("container_id", "node_id", "node_http_address", "resource", "state", "exit_status", "diagnostics", "start_time_ms", "finish_time_ms", "log_url")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_HTTP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    EXIT_STATUS_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    FINISH_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    LOG_URL_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    node_id: str
    node_http_address: str
    resource: Resource
    state: str
    exit_status: int
    diagnostics: str
    start_time_ms: int
    finish_time_ms: int
    log_url: str
    def __init__(self, container_id: _Optional[str] = ..., node_id: _Optional[str] = ..., node_http_address: _Optional[str] = ..., resource: _Optional[_Union[Resource, _Mapping]] = ..., state: _Optional[str] = ..., exit_status: _Optional[int] = ..., diagnostics: _Optional[str] = ..., start_time_ms: _Optional[int] = ..., finish_time_ms: _Optional[int] = ..., log_url: _Optional[str] = ...) -> None: ...

class GetContainersRequest(_message.Message):
    __slots__ = ("application_id",)
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    application_id: str
    def __init__(self, application_id: _Optional[str] = ...) -> None: ...

class GetContainersResponse(_message.Message):
    __slots__ = ("containers",)
    CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    containers: _containers.RepeatedCompositeFieldContainer[ContainerReport]
    def __init__(self, containers: _Optional[_Iterable[_Union[ContainerReport, _Mapping]]] = ...) -> None: ...

class KillApplicationRequest(_message.Message):
    __slots__ = ("application_id", "diagnostics", "user")
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    application_id: str
    diagnostics: str
    user: str
    def __init__(self, application_id: _Optional[str] = ..., diagnostics: _Optional[str] = ..., user: _Optional[str] = ...) -> None: ...

class KillApplicationResponse(_message.Message):
    __slots__ = ("is_kill_completed",)
    IS_KILL_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    is_kill_completed: bool
    def __init__(self, is_kill_completed: _Optional[bool] = ...) -> None: ...

class GetClusterMetricsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ClusterMetrics(_message.Message):
    __slots__ = ("apps_submitted", "apps_pending", "apps_running", "apps_completed", "apps_failed", "apps_killed", "total", "allocated", "available", "pending", "containers_allocated", "containers_pending", "active_nodes", "lost_nodes", "unhealthy_nodes", "decommissioned_nodes", "shutdown_nodes", "cluster_timestamp")
    APPS_SUBMITTED_FIELD_NUMBER: _ClassVar[int]
    APPS_PENDING_FIELD_NUMBER: _ClassVar[int]
    APPS_RUNNING_FIELD_NUMBER: _ClassVar[int]
    APPS_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    APPS_FAILED_FIELD_NUMBER: _ClassVar[int]
    APPS_KILLED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_PENDING_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_NODES_FIELD_NUMBER: _ClassVar[int]
    LOST_NODES_FIELD_NUMBER: _ClassVar[int]
    UNHEALTHY_NODES_FIELD_NUMBER: _ClassVar[int]
    DECOMMISSIONED_NODES_FIELD_NUMBER: _ClassVar[int]
    SHUTDOWN_NODES_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    apps_submitted: int
    apps_pending: int
    apps_running: int
    apps_completed: int
    apps_failed: int
    apps_killed: int
    total: Resource
    allocated: Resource
    available: Resource
    pending: Resource
    containers_allocated: int
    containers_pending: int
    active_nodes: int
    lost_nodes: int
    unhealthy_nodes: int
    decommissioned_nodes: int
    shutdown_nodes: int
    cluster_timestamp: int
    def __init__(self, apps_submitted: _Optional[int] = ..., apps_pending: _Optional[int] = ..., apps_running: _Optional[int] = ..., apps_completed: _Optional[int] = ..., apps_failed: _Optional[int] = ..., apps_killed: _Optional[int] = ..., total: _Optional[_Union[Resource, _Mapping]] = ..., allocated: _Optional[_Union[Resource, _Mapping]] = ..., available: _Optional[_Union[Resource, _Mapping]] = ..., pending: _Optional[_Union[Resource, _Mapping]] = ..., containers_allocated: _Optional[int] = ..., containers_pending: _Optional[int] = ..., active_nodes: _Optional[int] = ..., lost_nodes: _Optional[int] = ..., unhealthy_nodes: _Optional[int] = ..., decommissioned_nodes: _Optional[int] = ..., shutdown_nodes: _Optional[int] = ..., cluster_timestamp: _Optional[int] = ...) -> None: ...

class GetClusterMetricsResponse(_message.Message):
    __slots__ = ("metrics",)
    METRICS_FIELD_NUMBER: _ClassVar[int]
    metrics: ClusterMetrics
    def __init__(self, metrics: _Optional[_Union[ClusterMetrics, _Mapping]] = ...) -> None: ...

class GetClusterNodesRequest(_message.Message):
    __slots__ = ("states",)
    STATES_FIELD_NUMBER: _ClassVar[int]
    states: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, states: _Optional[_Iterable[str]] = ...) -> None: ...

class GetClusterNodesResponse(_message.Message):
    __slots__ = ("nodes",)
    NODES_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[NodeReport]
    def __init__(self, nodes: _Optional[_Iterable[_Union[NodeReport, _Mapping]]] = ...) -> None: ...

class QueueInfo(_message.Message):
    __slots__ = ("path", "name", "capacity", "max_capacity", "absolute_capacity", "weight", "used", "num_applications", "children", "state")
    PATH_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    MAX_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    ABSOLUTE_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    NUM_APPLICATIONS_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    path: str
    name: str
    capacity: float
    max_capacity: float
    absolute_capacity: float
    weight: float
    used: Resource
    num_applications: int
    children: _containers.RepeatedCompositeFieldContainer[QueueInfo]
    state: str
    def __init__(self, path: _Optional[str] = ..., name: _Optional[str] = ..., capacity: _Optional[float] = ..., max_capacity: _Optional[float] = ..., absolute_capacity: _Optional[float] = ..., weight: _Optional[float] = ..., used: _Optional[_Union[Resource, _Mapping]] = ..., num_applications: _Optional[int] = ..., children: _Optional[_Iterable[_Union[QueueInfo, _Mapping]]] = ..., state: _Optional[str] = ...) -> None: ...

class GetQueueInfoRequest(_message.Message):
    __slots__ = ("queue",)
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class GetQueueInfoResponse(_message.Message):
    __slots__ = ("queue",)
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: QueueInfo
    def __init__(self, queue: _Optional[_Union[QueueInfo, _Mapping]] = ...) -> None: ...

class MoveApplicationRequest(_message.Message):
    __slots__ = ("application_id", "queue", "user")
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    application_id: str
    queue: str
    user: str
    def __init__(self, application_id: _Optional[str] = ..., queue: _Optional[str] = ..., user: _Optional[str] = ...) -> None: ...

class MoveApplicationResponse(_message.Message):
    __slots__ = ("queue",)
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class UpdateApplicationPriorityRequest(_message.Message):
    __slots__ = ("application_id", "priority", "user")
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    application_id: str
    priority: int
    user: str
    def __init__(self, application_id: _Optional[str] = ..., priority: _Optional[int] = ..., user: _Optional[str] = ...) -> None: ...

class UpdateApplicationPriorityResponse(_message.Message):
    __slots__ = ("priority",)
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    priority: int
    def __init__(self, priority: _Optional[int] = ...) -> None: ...

class NewReservationRequest(_message.Message):
    __slots__ = ("user",)
    USER_FIELD_NUMBER: _ClassVar[int]
    user: str
    def __init__(self, user: _Optional[str] = ...) -> None: ...

class NewReservationResponse(_message.Message):
    __slots__ = ("reservation_id",)
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    reservation_id: str
    def __init__(self, reservation_id: _Optional[str] = ...) -> None: ...

class SubmitReservationRequest(_message.Message):
    __slots__ = ("reservation_id", "queue", "definition_json", "user")
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    DEFINITION_JSON_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    reservation_id: str
    queue: str
    definition_json: str
    user: str
    def __init__(self, reservation_id: _Optional[str] = ..., queue: _Optional[str] = ..., definition_json: _Optional[str] = ..., user: _Optional[str] = ...) -> None: ...

class SubmitReservationResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DeleteReservationRequest(_message.Message):
    __slots__ = ("reservation_id", "user")
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    reservation_id: str
    user: str
    def __init__(self, reservation_id: _Optional[str] = ..., user: _Optional[str] = ...) -> None: ...

class DeleteReservationResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RefreshQueuesRequest(_message.Message):
    __slots__ = ("dry_run", "user")
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    dry_run: bool
    user: str
    def __init__(self, dry_run: _Optional[bool] = ..., user: _Optional[str] = ...) -> None: ...

class RefreshQueuesResponse(_message.Message):
    __slots__ = ("queues",)
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    queues: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, queues: _Optional[_Iterable[str]] = ...) -> None: ...

class StartContainerRequest(_message.Message):
    __slots__ = ("container_token", "launch_context")
    CONTAINER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LAUNCH_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    container_token: str
    launch_context: ContainerLaunchContext
    def __init__(self, container_token: _Optional[str] = ..., launch_context: _Optional[_Union[ContainerLaunchContext, _Mapping]] = ...) -> None: ...

class StartContainersRequest(_message.Message):
    __slots__ = ("requests",)
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.RepeatedCompositeFieldContainer[StartContainerRequest]
    def __init__(self, requests: _Optional[_Iterable[_Union[StartContainerRequest, _Mapping]]] = ...) -> None: ...

class ContainerError(_message.Message):
    __slots__ = ("container_id", "exception", "message")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    EXCEPTION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    exception: str
    message: str
    def __init__(self, container_id: _Optional[str] = ..., exception: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class StartContainersResponse(_message.Message):
    __slots__ = ("succeeded", "failed")
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    succeeded: _containers.RepeatedScalarFieldContainer[str]
    failed: _containers.RepeatedCompositeFieldContainer[ContainerError]
    def __init__(self, succeeded: _Optional[_Iterable[str]] = ..., failed: _Optional[_Iterable[_Union[ContainerError, _Mapping]]] = ...) -> None: ...

class ContainerIdsRequest(_message.Message):
    __slots__ = ("container_ids",)
    CONTAINER_IDS_FIELD_NUMBER: _ClassVar[int]
    container_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, container_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class StopContainersResponse(_message.Message):
    __slots__ = ("succeeded", "failed")
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    succeeded: _containers.RepeatedScalarFieldContainer[str]
    failed: _containers.RepeatedCompositeFieldContainer[ContainerError]
    def __init__(self, succeeded: _Optional[_Iterable[str]] = ..., failed: _Optional[_Iterable[_Union[ContainerError, _Mapping]]] = ...) -> None: ...

class GetContainerStatusesResponse(_message.Message):
    __slots__ = ("statuses", "failed")
    STATUSES_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    statuses: _containers.RepeatedCompositeFieldContainer[ContainerStatus]
    failed: _containers.RepeatedCompositeFieldContainer[ContainerError]
    def __init__(self, statuses: _Optional[_Iterable[_Union[ContainerStatus, _Mapping]]] = ..., failed: _Optional[_Iterable[_Union[ContainerError, _Mapping]]] = ...) -> None: ...
