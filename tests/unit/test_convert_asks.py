"""An allocate call's asks as the gRPC door builds them: converted together, they equal the asks converted one
by one, and asks of the same size share one capability."""

from __future__ import annotations

from proto import shepherd_pb2 as pb
from rm.service import convert


def test_asks_converted_together_equal_asks_converted_one_by_one() -> None:
    asks = [
        pb.ResourceAsk(allocation_request_id=1, priority=2, num_containers=3,
                       capability=pb.Resource(values={"memory-mb": 1024, "vcores": 1})),
        pb.ResourceAsk(allocation_request_id=2, priority=1, num_containers=1, nodes=["h1:8041"], racks=["/r1"],
                       capability=pb.Resource(values={"memory-mb": 1024, "vcores": 1}), ask_type=pb.ALTRUISTIC,
                       remaining_work_s=12.5, stage="map"),
        pb.ResourceAsk(allocation_request_id=3, num_containers=2, racks=["/r2"], relax_locality=True,
                       capability=pb.Resource(values={"memory-mb": 2048, "vcores": 2, "gpu": 1})),
        pb.ResourceAsk(allocation_request_id=4, num_containers=0,
                       capability=pb.Resource(values={"vcores": 1, "memory-mb": 1024})),
        pb.ResourceAsk(allocation_request_id=5, num_containers=1),
    ]
    request = pb.AllocateRequest.FromString(pb.AllocateRequest(asks=asks).SerializeToString())
    together = convert.asks_from_pb(request.asks)
    assert together == [convert.ask_from_pb(a) for a in request.asks]
    assert together[0].capability is together[1].capability
    assert not together[1].relax_locality
    assert together[2].relax_locality
    assert together[3].capability == together[0].capability
