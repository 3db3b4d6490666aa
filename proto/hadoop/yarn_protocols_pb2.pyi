from proto.hadoop import ipc_pb2 as _ipc_pb2
from proto.hadoop import yarn_records_pb2 as _yarn_records_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SchedulerResourceTypes(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MEMORY: _ClassVar[SchedulerResourceTypes]
    CPU: _ClassVar[SchedulerResourceTypes]

class AMCommand(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AM_RESYNC: _ClassVar[AMCommand]
    AM_SHUTDOWN: _ClassVar[AMCommand]

class DecommissionType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NORMAL: _ClassVar[DecommissionType]
    GRACEFUL: _ClassVar[DecommissionType]
    FORCEFUL: _ClassVar[DecommissionType]
MEMORY: SchedulerResourceTypes
CPU: SchedulerResourceTypes
AM_RESYNC: AMCommand
AM_SHUTDOWN: AMCommand
NORMAL: DecommissionType
GRACEFUL: DecommissionType
FORCEFUL: DecommissionType

class GetNewApplicationRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetNewApplicationResponse(_message.Message):
    __slots__ = ("application_id", "maximum_capability")
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    application_id: _yarn_records_pb2.ApplicationId
    maximum_capability: _yarn_records_pb2.Resource
    def __init__(self, application_id: _Optional[_Union[_yarn_records_pb2.ApplicationId, _Mapping]] = ..., maximum_capability: _Optional[_Union[_yarn_records_pb2.Resource, _Mapping]] = ...) -> None: ...

class SubmitApplicationRequest(_message.Message):
    __slots__ = ("application_submission_context",)
    APPLICATION_SUBMISSION_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    application_submission_context: _yarn_records_pb2.ApplicationSubmissionContext
    def __init__(self, application_submission_context: _Optional[_Union[_yarn_records_pb2.ApplicationSubmissionContext, _Mapping]] = ...) -> None: ...

class SubmitApplicationResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetApplicationReportRequest(_message.Message):
    __slots__ = ("application_id",)
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    application_id: _yarn_records_pb2.ApplicationId
    def __init__(self, application_id: _Optional[_Union[_yarn_records_pb2.ApplicationId, _Mapping]] = ...) -> None: ...

class GetApplicationReportResponse(_message.Message):
    __slots__ = ("application_report",)
    APPLICATION_REPORT_FIELD_NUMBER: _ClassVar[int]
    application_report: _yarn_records_pb2.ApplicationReport
    def __init__(self, application_report: _Optional[_Union[_yarn_records_pb2.ApplicationReport, _Mapping]] = ...) -> None: ...

class KillApplicationRequest(_message.Message):
    __slots__ = ("application_id", "diagnostics")
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    application_id: _yarn_records_pb2.ApplicationId
    diagnostics: str
    def __init__(self, application_id: _Optional[_Union[_yarn_records_pb2.ApplicationId, _Mapping]] = ..., diagnostics: _Optional[str] = ...) -> None: ...

class KillApplicationResponse(_message.Message):
    __slots__ = ("is_kill_completed",)
    IS_KILL_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    is_kill_completed: bool
    def __init__(self, is_kill_completed: _Optional[bool] = ...) -> None: ...

class GetClusterMetricsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetClusterMetricsResponse(_message.Message):
    __slots__ = ("cluster_metrics",)
    CLUSTER_METRICS_FIELD_NUMBER: _ClassVar[int]
    cluster_metrics: _yarn_records_pb2.YarnClusterMetrics
    def __init__(self, cluster_metrics: _Optional[_Union[_yarn_records_pb2.YarnClusterMetrics, _Mapping]] = ...) -> None: ...

class GetApplicationsRequest(_message.Message):
    __slots__ = ("application_types", "application_states", "users", "queues", "limit", "start_begin", "start_end", "finish_begin", "finish_end", "application_tags", "name")
    APPLICATION_TYPES_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_STATES_FIELD_NUMBER: _ClassVar[int]
    USERS_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    START_BEGIN_FIELD_NUMBER: _ClassVar[int]
    START_END_FIELD_NUMBER: _ClassVar[int]
    FINISH_BEGIN_FIELD_NUMBER: _ClassVar[int]
    FINISH_END_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_TAGS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    application_types: _containers.RepeatedScalarFieldContainer[str]
    application_states: _containers.RepeatedScalarFieldContainer[_yarn_records_pb2.YarnApplicationState]
    users: _containers.RepeatedScalarFieldContainer[str]
    queues: _containers.RepeatedScalarFieldContainer[str]
    limit: int
    start_begin: int
    start_end: int
    finish_begin: int
    finish_end: int
    application_tags: _containers.RepeatedScalarFieldContainer[str]
    name: str
    def __init__(self, application_types: _Optional[_Iterable[str]] = ..., application_states: _Optional[_Iterable[_Union[_yarn_records_pb2.YarnApplicationState, str]]] = ..., users: _Optional[_Iterable[str]] = ..., queues: _Optional[_Iterable[str]] = ..., limit: _Optional[int] = ..., start_begin: _Optional[int] = ..., start_end: _Optional[int] = ..., finish_begin: _Optional[int] = ..., finish_end: _Optional[int] = ..., application_tags: _Optional[_Iterable[str]] = ..., name: _Optional[str] = ...) -> None: ...

class GetApplicationsResponse(_message.Message):
    __slots__ = ("applications",)
    APPLICATIONS_FIELD_NUMBER: _ClassVar[int]
    applications: _containers.RepeatedCompositeFieldContainer[_yarn_records_pb2.ApplicationReport]
    def __init__(self, applications: _Optional[_Iterable[_Union[_yarn_records_pb2.ApplicationReport, _Mapping]]] = ...) -> None: ...

class GetClusterNodesRequest(_message.Message):
    __slots__ = ("node_states",)
    NODE_STATES_FIELD_NUMBER: _ClassVar[int]
    node_states: _containers.RepeatedScalarFieldContainer[_yarn_records_pb2.NodeState]
    def __init__(self, node_states: _Optional[_Iterable[_Union[_yarn_records_pb2.NodeState, str]]] = ...) -> None: ...

class GetClusterNodesResponse(_message.Message):
    __slots__ = ("node_reports",)
    NODE_REPORTS_FIELD_NUMBER: _ClassVar[int]
    node_reports: _containers.RepeatedCompositeFieldContainer[_yarn_records_pb2.NodeReport]
    def __init__(self, node_reports: _Optional[_Iterable[_Union[_yarn_records_pb2.NodeReport, _Mapping]]] = ...) -> None: ...

class GetQueueInfoRequest(_message.Message):
    __slots__ = ("queue_name", "include_applications", "include_child_queues", "recursive")
    QUEUE_NAME_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_APPLICATIONS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_CHILD_QUEUES_FIELD_NUMBER: _ClassVar[int]
    RECURSIVE_FIELD_NUMBER: _ClassVar[int]
    queue_name: str
    include_applications: bool
    include_child_queues: bool
    recursive: bool
    def __init__(self, queue_name: _Optional[str] = ..., include_applications: _Optional[bool] = ..., include_child_queues: _Optional[bool] = ..., recursive: _Optional[bool] = ...) -> None: ...

class GetQueueInfoResponse(_message.Message):
    __slots__ = ("queue_info",)
    QUEUE_INFO_FIELD_NUMBER: _ClassVar[int]
    queue_info: _yarn_records_pb2.QueueInfo
    def __init__(self, queue_info: _Optional[_Union[_yarn_records_pb2.QueueInfo, _Mapping]] = ...) -> None: ...

class GetApplicationAttemptReportRequest(_message.Message):
    __slots__ = ("application_attempt_id",)
    APPLICATION_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    application_attempt_id: _yarn_records_pb2.ApplicationAttemptId
    def __init__(self, application_attempt_id: _Optional[_Union[_yarn_records_pb2.ApplicationAttemptId, _Mapping]] = ...) -> None: ...

class GetApplicationAttemptReportResponse(_message.Message):
    __slots__ = ("application_attempt_report",)
    APPLICATION_ATTEMPT_REPORT_FIELD_NUMBER: _ClassVar[int]
    application_attempt_report: _yarn_records_pb2.ApplicationAttemptReport
    def __init__(self, application_attempt_report: _Optional[_Union[_yarn_records_pb2.ApplicationAttemptReport, _Mapping]] = ...) -> None: ...

class GetApplicationAttemptsRequest(_message.Message):
    __slots__ = ("application_id",)
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    application_id: _yarn_records_pb2.ApplicationId
    def __init__(self, application_id: _Optional[_Union[_yarn_records_pb2.ApplicationId, _Mapping]] = ...) -> None: ...

class GetApplicationAttemptsResponse(_message.Message):
    __slots__ = ("application_attempts",)
    APPLICATION_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    application_attempts: _containers.RepeatedCompositeFieldContainer[_yarn_records_pb2.ApplicationAttemptReport]
    def __init__(self, application_attempts: _Optional[_Iterable[_Union[_yarn_records_pb2.ApplicationAttemptReport, _Mapping]]] = ...) -> None: ...

class GetContainerReportRequest(_message.Message):
    __slots__ = ("container_id",)
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    container_id: _yarn_records_pb2.ContainerId
    def __init__(self, container_id: _Optional[_Union[_yarn_records_pb2.ContainerId, _Mapping]] = ...) -> None: ...

class GetContainerReportResponse(_message.Message):
    __slots__ = ("container_report",)
    CONTAINER_REPORT_FIELD_NUMBER: _ClassVar[int]
    container_report: _yarn_records_pb2.ContainerReport
    def __init__(self, container_report: _Optional[_Union[_yarn_records_pb2.ContainerReport, _Mapping]] = ...) -> None: ...

class GetContainersRequest(_message.Message):
    __slots__ = ("application_attempt_id",)
    APPLICATION_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    application_attempt_id: _yarn_records_pb2.ApplicationAttemptId
    def __init__(self, application_attempt_id: _Optional[_Union[_yarn_records_pb2.ApplicationAttemptId, _Mapping]] = ...) -> None: ...

class GetContainersResponse(_message.Message):
    __slots__ = ("containers",)
    CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    containers: _containers.RepeatedCompositeFieldContainer[_yarn_records_pb2.ContainerReport]
    def __init__(self, containers: _Optional[_Iterable[_Union[_yarn_records_pb2.ContainerReport, _Mapping]]] = ...) -> None: ...

class MoveApplicationAcrossQueuesRequest(_message.Message):
    __slots__ = ("application_id", "target_queue")
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_QUEUE_FIELD_NUMBER: _ClassVar[int]
    application_id: _yarn_records_pb2.ApplicationId
    target_queue: str
    def __init__(self, application_id: _Optional[_Union[_yarn_records_pb2.ApplicationId, _Mapping]] = ..., target_queue: _Optional[str] = ...) -> None: ...

class MoveApplicationAcrossQueuesResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UpdateApplicationPriorityRequest(_message.Message):
    __slots__ = ("application_id", "application_priority")
    APPLICATION_ID_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    application_id: _yarn_records_pb2.ApplicationId
    application_priority: _yarn_records_pb2.Priority
    def __init__(self, application_id: _Optional[_Union[_yarn_records_pb2.ApplicationId, _Mapping]] = ..., application_priority: _Optional[_Union[_yarn_records_pb2.Priority, _Mapping]] = ...) -> None: ...

class UpdateApplicationPriorityResponse(_message.Message):
    __slots__ = ("application_priority",)
    APPLICATION_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    application_priority: _yarn_records_pb2.Priority
    def __init__(self, application_priority: _Optional[_Union[_yarn_records_pb2.Priority, _Mapping]] = ...) -> None: ...

class GetNewReservationRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetNewReservationResponse(_message.Message):
    __slots__ = ("reservation_id",)
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    reservation_id: _yarn_records_pb2.ReservationId
    def __init__(self, reservation_id: _Optional[_Union[_yarn_records_pb2.ReservationId, _Mapping]] = ...) -> None: ...

class ReservationSubmissionRequest(_message.Message):
    __slots__ = ("queue", "reservation_definition", "reservation_id")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_DEFINITION_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    queue: str
    reservation_definition: _yarn_records_pb2.ReservationDefinition
    reservation_id: _yarn_records_pb2.ReservationId
    def __init__(self, queue: _Optional[str] = ..., reservation_definition: _Optional[_Union[_yarn_records_pb2.ReservationDefinition, _Mapping]] = ..., reservation_id: _Optional[_Union[_yarn_records_pb2.ReservationId, _Mapping]] = ...) -> None: ...

class ReservationSubmissionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReservationUpdateRequest(_message.Message):
    __slots__ = ("reservation_definition", "reservation_id")
    RESERVATION_DEFINITION_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    reservation_definition: _yarn_records_pb2.ReservationDefinition
    reservation_id: _yarn_records_pb2.ReservationId
    def __init__(self, reservation_definition: _Optional[_Union[_yarn_records_pb2.ReservationDefinition, _Mapping]] = ..., reservation_id: _Optional[_Union[_yarn_records_pb2.ReservationId, _Mapping]] = ...) -> None: ...

class ReservationUpdateResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReservationDeleteRequest(_message.Message):
    __slots__ = ("reservation_id",)
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    reservation_id: _yarn_records_pb2.ReservationId
    def __init__(self, reservation_id: _Optional[_Union[_yarn_records_pb2.ReservationId, _Mapping]] = ...) -> None: ...

class ReservationDeleteResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReservationListRequest(_message.Message):
    __slots__ = ("queue", "reservation_id", "start_time", "end_time", "include_resource_allocations")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_RESOURCE_ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    queue: str
    reservation_id: str
    start_time: int
    end_time: int
    include_resource_allocations: bool
    def __init__(self, queue: _Optional[str] = ..., reservation_id: _Optional[str] = ..., start_time: _Optional[int] = ..., end_time: _Optional[int] = ..., include_resource_allocations: _Optional[bool] = ...) -> None: ...

class ReservationListResponse(_message.Message):
    __slots__ = ("reservations",)
    RESERVATIONS_FIELD_NUMBER: _ClassVar[int]
    reservations: _containers.RepeatedCompositeFieldContainer[_yarn_records_pb2.ReservationAllocationState]
    def __init__(self, reservations: _Optional[_Iterable[_Union[_yarn_records_pb2.ReservationAllocationState, _Mapping]]] = ...) -> None: ...

class RegisterApplicationMasterRequest(_message.Message):
    __slots__ = ("host", "rpc_port", "tracking_url")
    HOST_FIELD_NUMBER: _ClassVar[int]
    RPC_PORT_FIELD_NUMBER: _ClassVar[int]
    TRACKING_URL_FIELD_NUMBER: _ClassVar[int]
    host: str
    rpc_port: int
    tracking_url: str
    def __init__(self, host: _Optional[str] = ..., rpc_port: _Optional[int] = ..., tracking_url: _Optional[str] = ...) -> None: ...

class NMToken(_message.Message):
    __slots__ = ("node_id", "token")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    node_id: _yarn_records_pb2.NodeId
    token: _ipc_pb2.Token
    def __init__(self, node_id: _Optional[_Union[_yarn_records_pb2.NodeId, _Mapping]] = ..., token: _Optional[_Union[_ipc_pb2.Token, _Mapping]] = ...) -> None: ...

class RegisterApplicationMasterResponse(_message.Message):
    __slots__ = ("maximum_capability", "client_to_am_token_master_key", "application_acls", "containers_from_previous_attempts", "queue", "nm_tokens_from_previous_attempts", "scheduler_resource_types")
    MAXIMUM_CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    CLIENT_TO_AM_TOKEN_MASTER_KEY_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_ACLS_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_FROM_PREVIOUS_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NM_TOKENS_FROM_PREVIOUS_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_RESOURCE_TYPES_FIELD_NUMBER: _ClassVar[int]
    maximum_capability: _yarn_records_pb2.Resource
    client_to_am_token_master_key: bytes
    application_acls: _containers.RepeatedCompositeFieldContainer[_yarn_records_pb2.ApplicationAcl]
    containers_from_previous_attempts: _containers.RepeatedCompositeFieldContainer[_yarn_records_pb2.Container]
    queue: str
    nm_tokens_from_previous_attempts: _containers.RepeatedCompositeFieldContainer[NMToken]
    scheduler_resource_types: _containers.RepeatedScalarFieldContainer[SchedulerResourceTypes]
    def __init__(self, maximum_capability: _Optional[_Union[_yarn_records_pb2.Resource, _Mapping]] = ..., client_to_am_token_master_key: _Optional[bytes] = ..., application_acls: _Optional[_Iterable[_Union[_yarn_records_pb2.ApplicationAcl, _Mapping]]] = ..., containers_from_previous_attempts: _Optional[_Iterable[_Union[_yarn_records_pb2.Container, _Mapping]]] = ..., queue: _Optional[str] = ..., nm_tokens_from_previous_attempts: _Optional[_Iterable[_Union[NMToken, _Mapping]]] = ..., scheduler_resource_types: _Optional[_Iterable[_Union[SchedulerResourceTypes, str]]] = ...) -> None: ...

class ResourceBlacklistRequest(_message.Message):
    __slots__ = ("blacklist_additions", "blacklist_removals")
    BLACKLIST_ADDITIONS_FIELD_NUMBER: _ClassVar[int]
    BLACKLIST_REMOVALS_FIELD_NUMBER: _ClassVar[int]
    blacklist_additions: _containers.RepeatedScalarFieldContainer[str]
    blacklist_removals: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, blacklist_additions: _Optional[_Iterable[str]] = ..., blacklist_removals: _Optional[_Iterable[str]] = ...) -> None: ...

class AllocateRequest(_message.Message):
    __slots__ = ("ask", "release", "blacklist_request", "response_id", "progress", "tracking_url")
    ASK_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    BLACKLIST_REQUEST_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_ID_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    TRACKING_URL_FIELD_NUMBER: _ClassVar[int]
    ask: _containers.RepeatedCompositeFieldContainer[_yarn_records_pb2.ResourceRequest]
    release: _containers.RepeatedCompositeFieldContainer[_yarn_records_pb2.ContainerId]
    blacklist_request: ResourceBlacklistRequest
    response_id: int
    progress: float
    tracking_url: str
    def __init__(self, ask: _Optional[_Iterable[_Union[_yarn_records_pb2.ResourceRequest, _Mapping]]] = ..., release: _Optional[_Iterable[_Union[_yarn_records_pb2.ContainerId, _Mapping]]] = ..., blacklist_request: _Optional[_Union[ResourceBlacklistRequest, _Mapping]] = ..., response_id: _Optional[int] = ..., progress: _Optional[float] = ..., tracking_url: _Optional[str] = ...) -> None: ...

class AllocateResponse(_message.Message):
    __slots__ = ("am_command", "response_id", "allocated_containers", "completed_container_statuses", "limit", "updated_nodes", "num_cluster_nodes", "nm_tokens", "am_rm_token", "application_priority")
    AM_COMMAND_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_CONTAINER_STATUSES_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_NODES_FIELD_NUMBER: _ClassVar[int]
    NUM_CLUSTER_NODES_FIELD_NUMBER: _ClassVar[int]
    NM_TOKENS_FIELD_NUMBER: _ClassVar[int]
    AM_RM_TOKEN_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    am_command: AMCommand
    response_id: int
    allocated_containers: _containers.RepeatedCompositeFieldContainer[_yarn_records_pb2.Container]
    completed_container_statuses: _containers.RepeatedCompositeFieldContainer[_yarn_records_pb2.ContainerStatus]
    limit: _yarn_records_pb2.Resource
    updated_nodes: _containers.RepeatedCompositeFieldContainer[_yarn_records_pb2.NodeReport]
    num_cluster_nodes: int
    nm_tokens: _containers.RepeatedCompositeFieldContainer[NMToken]
    am_rm_token: _ipc_pb2.Token
    application_priority: _yarn_records_pb2.Priority
    def __init__(self, am_command: _Optional[_Union[AMCommand, str]] = ..., response_id: _Optional[int] = ..., allocated_containers: _Optional[_Iterable[_Union[_yarn_records_pb2.Container, _Mapping]]] = ..., completed_container_statuses: _Optional[_Iterable[_Union[_yarn_records_pb2.ContainerStatus, _Mapping]]] = ..., limit: _Optional[_Union[_yarn_records_pb2.Resource, _Mapping]] = ..., updated_nodes: _Optional[_Iterable[_Union[_yarn_records_pb2.NodeReport, _Mapping]]] = ..., num_cluster_nodes: _Optional[int] = ..., nm_tokens: _Optional[_Iterable[_Union[NMToken, _Mapping]]] = ..., am_rm_token: _Optional[_Union[_ipc_pb2.Token, _Mapping]] = ..., application_priority: _Optional[_Union[_yarn_records_pb2.Priority, _Mapping]] = ...) -> None: ...

class FinishApplicationMasterRequest(_message.Message):
    __slots__ = ("diagnostics", "tracking_url", "final_application_status")
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    TRACKING_URL_FIELD_NUMBER: _ClassVar[int]
    FINAL_APPLICATION_STATUS_FIELD_NUMBER: _ClassVar[int]
    diagnostics: str
    tracking_url: str
    final_application_status: _yarn_records_pb2.FinalApplicationStatus
    def __init__(self, diagnostics: _Optional[str] = ..., tracking_url: _Optional[str] = ..., final_application_status: _Optional[_Union[_yarn_records_pb2.FinalApplicationStatus, str]] = ...) -> None: ...

class FinishApplicationMasterResponse(_message.Message):
    __slots__ = ("is_unregistered",)
    IS_UNREGISTERED_FIELD_NUMBER: _ClassVar[int]
    is_unregistered: bool
    def __init__(self, is_unregistered: _Optional[bool] = ...) -> None: ...

class RefreshQueuesRequest(_message.Message):
    __slots__ = ("sub_cluster_id",)
    SUB_CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    sub_cluster_id: str
    def __init__(self, sub_cluster_id: _Optional[str] = ...) -> None: ...

class RefreshQueuesResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RefreshAdminAclsRequest(_message.Message):
    __slots__ = ("sub_cluster_id",)
    SUB_CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    sub_cluster_id: str
    def __init__(self, sub_cluster_id: _Optional[str] = ...) -> None: ...

class RefreshAdminAclsResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RefreshNodesRequest(_message.Message):
    __slots__ = ("decommission_type", "decommission_timeout", "sub_cluster_id")
    DECOMMISSION_TYPE_FIELD_NUMBER: _ClassVar[int]
    DECOMMISSION_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    SUB_CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    decommission_type: DecommissionType
    decommission_timeout: int
    sub_cluster_id: str
    def __init__(self, decommission_type: _Optional[_Union[DecommissionType, str]] = ..., decommission_timeout: _Optional[int] = ..., sub_cluster_id: _Optional[str] = ...) -> None: ...

class RefreshNodesResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StartContainerRequest(_message.Message):
    __slots__ = ("container_launch_context", "container_token")
    CONTAINER_LAUNCH_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    container_launch_context: _yarn_records_pb2.ContainerLaunchContext
    container_token: _ipc_pb2.Token
    def __init__(self, container_launch_context: _Optional[_Union[_yarn_records_pb2.ContainerLaunchContext, _Mapping]] = ..., container_token: _Optional[_Union[_ipc_pb2.Token, _Mapping]] = ...) -> None: ...

class StartContainersRequest(_message.Message):
    __slots__ = ("start_container_request",)
    START_CONTAINER_REQUEST_FIELD_NUMBER: _ClassVar[int]
    start_container_request: _containers.RepeatedCompositeFieldContainer[StartContainerRequest]
    def __init__(self, start_container_request: _Optional[_Iterable[_Union[StartContainerRequest, _Mapping]]] = ...) -> None: ...

class ContainerExceptionMap(_message.Message):
    __slots__ = ("container_id", "exception")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    EXCEPTION_FIELD_NUMBER: _ClassVar[int]
    container_id: _yarn_records_pb2.ContainerId
    exception: _yarn_records_pb2.SerializedException
    def __init__(self, container_id: _Optional[_Union[_yarn_records_pb2.ContainerId, _Mapping]] = ..., exception: _Optional[_Union[_yarn_records_pb2.SerializedException, _Mapping]] = ...) -> None: ...

class StartContainersResponse(_message.Message):
    __slots__ = ("services_meta_data", "succeeded_requests", "failed_requests")
    SERVICES_META_DATA_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    FAILED_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    services_meta_data: _containers.RepeatedCompositeFieldContainer[_yarn_records_pb2.StringBytesMap]
    succeeded_requests: _containers.RepeatedCompositeFieldContainer[_yarn_records_pb2.ContainerId]
    failed_requests: _containers.RepeatedCompositeFieldContainer[ContainerExceptionMap]
    def __init__(self, services_meta_data: _Optional[_Iterable[_Union[_yarn_records_pb2.StringBytesMap, _Mapping]]] = ..., succeeded_requests: _Optional[_Iterable[_Union[_yarn_records_pb2.ContainerId, _Mapping]]] = ..., failed_requests: _Optional[_Iterable[_Union[ContainerExceptionMap, _Mapping]]] = ...) -> None: ...

class StopContainersRequest(_message.Message):
    __slots__ = ("container_id",)
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    container_id: _containers.RepeatedCompositeFieldContainer[_yarn_records_pb2.ContainerId]
    def __init__(self, container_id: _Optional[_Iterable[_Union[_yarn_records_pb2.ContainerId, _Mapping]]] = ...) -> None: ...

class StopContainersResponse(_message.Message):
    __slots__ = ("succeeded_requests", "failed_requests")
    SUCCEEDED_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    FAILED_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    succeeded_requests: _containers.RepeatedCompositeFieldContainer[_yarn_records_pb2.ContainerId]
    failed_requests: _containers.RepeatedCompositeFieldContainer[ContainerExceptionMap]
    def __init__(self, succeeded_requests: _Optional[_Iterable[_Union[_yarn_records_pb2.ContainerId, _Mapping]]] = ..., failed_requests: _Optional[_Iterable[_Union[ContainerExceptionMap, _Mapping]]] = ...) -> None: ...

class GetContainerStatusesRequest(_message.Message):
    __slots__ = ("container_id",)
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    container_id: _containers.RepeatedCompositeFieldContainer[_yarn_records_pb2.ContainerId]
    def __init__(self, container_id: _Optional[_Iterable[_Union[_yarn_records_pb2.ContainerId, _Mapping]]] = ...) -> None: ...

class GetContainerStatusesResponse(_message.Message):
    __slots__ = ("status", "failed_requests")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    FAILED_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    status: _containers.RepeatedCompositeFieldContainer[_yarn_records_pb2.ContainerStatus]
    failed_requests: _containers.RepeatedCompositeFieldContainer[ContainerExceptionMap]
    def __init__(self, status: _Optional[_Iterable[_Union[_yarn_records_pb2.ContainerStatus, _Mapping]]] = ..., failed_requests: _Optional[_Iterable[_Union[ContainerExceptionMap, _Mapping]]] = ...) -> None: ...
