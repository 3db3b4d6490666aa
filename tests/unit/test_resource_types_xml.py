"""resource-types.xml and node-resources.xml: the types a cluster schedules, what a node offers of each, and
how the ResourceManager's and NodeManager's settings take them."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.hadoop_conf import Configuration, HadoopConfError
from common.resource_types import convert_units, node_resources, read_resource_types
from common.resources import Resources
from common.settings import SettingsError
from nodemanager.config import NodeManagerConfig, load_nm_settings
from rm.service.settings import load_rm_settings

GPU_AND_WIDGETS = {
    "yarn.resource-types": "yarn.io/gpu, example.com/widget",
    "yarn.resource-types.yarn.io/gpu.maximum-allocation": "2",
    "yarn.resource-types.example.com/widget.units": "Mi",
    "yarn.resource-types.example.com/widget.minimum-allocation": "1",
    "yarn.resource-types.example.com/widget.tags": "fast",
}


def site(path: Path, props: dict[str, str]) -> Path:
    body = "".join(f"<property><name>{k}</name><value>{v}</value></property>" for k, v in props.items())
    path.write_text(f'<?xml version="1.0"?>\n<configuration>{body}</configuration>\n')
    return path


def conf_of(tmp_path: Path, types: dict[str, str], nodes: dict[str, str] | None = None) -> Configuration:
    site(tmp_path / "resource-types.xml", types)
    if nodes is not None:
        site(tmp_path / "node-resources.xml", nodes)
    conf = Configuration({})
    conf.add_conf_dir(tmp_path)
    return conf


def test_declared_types_take_shepherds_names_units_and_maximums(tmp_path: Path) -> None:
    types = read_resource_types(conf_of(tmp_path, GPU_AND_WIDGETS))
    assert types.declared
    assert types.names() == {"memory-mb", "vcores", "gpu", "example.com/widget"}
    assert [(t.name, t.hadoop_name) for t in types.extra] == [("gpu", "yarn.io/gpu"),
                                                              ("example.com/widget", "example.com/widget")]
    assert types.maximum() == {"gpu": 2}  # the widget has no configured bound
    assert [types.units(t) for t in ("example.com/widget", "gpu", "memory-mb")] == ["Mi", "", "Mi"]
    assert types.source == str(tmp_path / "resource-types.xml")
    said = " ".join(types.ignored)
    assert "example.com/widget.minimum-allocation" in said
    assert "example.com/widget.tags" in said
    assert "gpu" not in said


def test_without_yarn_resource_types_the_nodes_say_which_types_exist(tmp_path: Path) -> None:
    only_memory = {"yarn.resource-types.memory-mb.maximum-allocation": "4096"}
    types = read_resource_types(conf_of(tmp_path, only_memory))
    assert not types.declared
    assert types.names() is None
    assert types.mandatory_maximum == {"memory-mb": 4096}
    empty = read_resource_types(conf_of(tmp_path, {"yarn.resource-types": ""}))
    assert empty.names() == {"memory-mb", "vcores"}  # set but empty: only the two every cluster has


@pytest.mark.parametrize(("props", "message"), [
    ({"yarn.resource-types": "gpu,memory-mb"}, r"memory-mb is always defined"),
    ({"yarn.resource-types": "vcores"}, r"vcores is always defined"),
    ({"yarn.resource-types": "2gpu"}, r"'2gpu' is not a valid resource name"),
    ({"yarn.resource-types": "yarn.io/gpu,gpu"}, r"gpu is listed twice"),
    ({"yarn.resource-types": "gpu", "yarn.resource-types.gpu.units": "GB"}, r"units = 'GB' .* not a unit"),
    ({"yarn.resource-types": "gpu", "yarn.resource-types.gpu.maximum-allocation": "lots"},
     r"gpu\.maximum-allocation = 'lots' \(from .*resource-types\.xml\) is not an integer"),
    ({"yarn.resource-types": "gpu", "yarn.resource-types.gpu.maximum-allocation": "0"}, r"at least 1"),
    ({"yarn.resource-types": "gpu", "yarn.resource-types.gpu.minimum-allocation": "3",
      "yarn.resource-types.gpu.maximum-allocation": "2"}, r"below its minimum-allocation 3"),
    ({"yarn.resource-types": "gpu", "yarn.resource-types.gpu.type": "NON_COUNTABLE"}, r"only .* COUNTABLE"),
])
def test_unusable_resource_types_name_the_property_and_file(tmp_path: Path, props: dict[str, str],
                                                            message: str) -> None:
    with pytest.raises(HadoopConfError, match=message):
        read_resource_types(conf_of(tmp_path, props))


def test_a_node_offers_amounts_in_each_types_units(tmp_path: Path) -> None:
    conf = conf_of(tmp_path, GPU_AND_WIDGETS, {
        "yarn.nodemanager.resource-type.yarn.io/gpu": "4",
        "yarn.nodemanager.resource-type.example.com/widget": "2Gi",  # the widget counts in Mi
        "yarn.nodemanager.resource-type.memory-mb": "16Gi",
        "yarn.nodemanager.resource-type.vcores": "0",  # 0: detect, as Hadoop
    })
    offered = node_resources(conf, read_resource_types(conf))
    assert offered == {"gpu": 4, "example.com/widget": 2048, "memory-mb": 16384}


def test_a_bare_amount_is_in_the_types_own_units_and_conversions_round_down() -> None:
    conf = Configuration({})
    conf.set("yarn.nodemanager.resource-type.memory-mb", "8192", "node-resources.xml")
    conf.set("yarn.nodemanager.resource-type.fpga", "1500m", "node-resources.xml")
    assert node_resources(conf, read_resource_types(conf)) == {"memory-mb": 8192, "fpga": 1}
    assert convert_units(3, "G", "Mi") == 2861  # 3e9 bytes
    with pytest.raises(ValueError, match="unknown unit"):
        convert_units(1, "GB", "")


def test_a_node_may_offer_only_declared_types_and_amounts(tmp_path: Path) -> None:
    conf = conf_of(tmp_path, GPU_AND_WIDGETS, {"yarn.nodemanager.resource-type.yarn.io/fpga": "1"})
    with pytest.raises(HadoopConfError, match=r"resource-type\.yarn\.io/fpga = '1' "
                                              r"\(from .*node-resources\.xml\): "
                                              r"yarn\.io/fpga is not a resource type of yarn\.resource"):
        node_resources(conf, read_resource_types(conf))
    conf = conf_of(tmp_path, GPU_AND_WIDGETS, {"yarn.nodemanager.resource-type.yarn.io/gpu": "two"})
    with pytest.raises(HadoopConfError, match=r"'two' .* is not an amount"):
        node_resources(conf, read_resource_types(conf))


# ---------------------------------------------------------------------------------- the daemons' settings


def test_the_resourcemanager_takes_types_and_maximums_from_resource_types_xml(tmp_path: Path) -> None:
    site(tmp_path / "yarn-site.xml", {"yarn.scheduler.maximum-allocation-mb": "16384"})
    site(tmp_path / "resource-types.xml", {**GPU_AND_WIDGETS,
                                           "yarn.resource-types.memory-mb.maximum-allocation": "8192"})
    s = load_rm_settings(env={"HADOOP_CONF_DIR": str(tmp_path)})
    assert s.config.resource_types == {"memory-mb", "vcores", "gpu", "example.com/widget"}
    # resource-types.xml's memory maximum wins over yarn-site's; vcores takes YARN's default 4
    assert s.config.maximum_allocation == Resources.of(memory_mb=8192, vcores=4, gpu=2)
    assert s.config.core().resource_types == s.config.resource_types
    assert any("yarn.scheduler.maximum-allocation-mb" in w and "ignored" in w for w in s.warnings)
    assert any("widget.minimum-allocation" in w for w in s.warnings)
    rows = {k: (v, src) for k, v, src in s.rows()}
    assert rows["resource types"] == ("example.com/widget, gpu, memory-mb, vcores",
                                      str(tmp_path / "resource-types.xml"))
    site(tmp_path / "resource-types.xml", {"yarn.resource-types": "memory-mb"})
    with pytest.raises(SettingsError, match="memory-mb is always defined"):
        load_rm_settings(env={"HADOOP_CONF_DIR": str(tmp_path)})


def test_without_the_files_the_resourcemanager_is_as_before(tmp_path: Path) -> None:
    site(tmp_path / "yarn-site.xml", {"yarn.scheduler.maximum-allocation-vcores": "8"})
    cfg = load_rm_settings(env={"HADOOP_CONF_DIR": str(tmp_path)}).config
    assert cfg.resource_types is None
    assert cfg.maximum_allocation == Resources.of(memory_mb=8192, vcores=8)


def test_the_nodemanager_takes_node_resources_xml_below_its_flags(tmp_path: Path) -> None:
    site(tmp_path / "yarn-site.xml", {"yarn.nodemanager.resource.memory-mb": "3072",
                                      "yarn.nodemanager.resource.cpu-vcores": "3"})
    site(tmp_path / "resource-types.xml", {"yarn.resource-types": "yarn.io/gpu,yarn.io/fpga"})
    site(tmp_path / "node-resources.xml", {"yarn.nodemanager.resource-type.yarn.io/gpu": "4",
                                           "yarn.nodemanager.resource-type.yarn.io/fpga": "1",
                                           "yarn.nodemanager.resource-type.memory-mb": "4096"})
    env = {"HADOOP_CONF_DIR": str(tmp_path)}
    s = load_nm_settings(NodeManagerConfig(), env=env)
    assert s.config.extra_resources == {"gpu": 4, "fpga": 1}
    # node-resources.xml's memory wins over yarn-site's, as in Hadoop; vcores come from yarn-site
    assert (s.config.memory_mb, s.config.vcores) == (4096, 3)
    assert s.config.capability() == {"memory-mb": 4096, "vcores": 3, "gpu": 4, "fpga": 1}
    rows = {k: (v, src) for k, v, src in s.rows}
    assert rows["extra resources"] == ("fpga=1,gpu=4", str(tmp_path / "node-resources.xml"))

    # shepherd's own property adds to the file's types and wins for a type both name
    yaml_file = tmp_path / "nm.yaml"
    yaml_file.write_text("shepherd.nodemanager.resources: gpu=2\n")
    merged = load_nm_settings(NodeManagerConfig(), env=env, config_file=yaml_file).config
    assert merged.extra_resources == {"gpu": 2, "fpga": 1}

    # an explicit flag wins over every file
    flagged = load_nm_settings(NodeManagerConfig(extra_resources={"gpu": 1}, memory_mb=2048), env=env,
                               explicit={"resources", "memory_mb"})
    assert (flagged.config.extra_resources, flagged.config.memory_mb) == ({"gpu": 1}, 2048)
    assert {k: src for k, _, src in flagged.rows}["extra resources"] == "flag --resources"
    cleared = load_nm_settings(NodeManagerConfig(), env=env, explicit={"resources"})
    assert cleared.config.extra_resources == {}  # --resources '' offers no extra type


def test_the_nodemanager_refuses_to_offer_a_type_the_cluster_does_not_declare(tmp_path: Path) -> None:
    site(tmp_path / "resource-types.xml", {"yarn.resource-types": "yarn.io/gpu"})
    env = {"HADOOP_CONF_DIR": str(tmp_path)}
    with pytest.raises(ValueError, match=r"offers fpga \(from flag --resources\), which yarn\.resource-types "
                                         r"\(from .*resource-types\.xml\) does not define: "
                                         r"it defines yarn\.io/gpu"):
        load_nm_settings(NodeManagerConfig(extra_resources={"fpga": 1}), env=env, explicit={"resources"})
    assert load_nm_settings(NodeManagerConfig(extra_resources={"gpu": 1}), env=env,
                            explicit={"resources"}).config.extra_resources == {"gpu": 1}
    # with no yarn.resource-types, a node offers whatever it is told (shepherd's way without the file)
    (tmp_path / "resource-types.xml").unlink()
    assert load_nm_settings(NodeManagerConfig(extra_resources={"fpga": 1}), env=env,
                            explicit={"resources"}).config.extra_resources == {"fpga": 1}


def test_config_convert_keeps_the_resource_type_properties(tmp_path: Path) -> None:
    from rm.commands.convert import convert

    site(tmp_path / "resource-types.xml", GPU_AND_WIDGETS)
    site(tmp_path / "node-resources.xml", {"yarn.nodemanager.resource-type.yarn.io/gpu": "4"})
    converted = convert(tmp_path, {})
    assert not converted.skipped
    yaml_file = tmp_path / "shepherd.yaml"
    yaml_file.write_text(converted.to_yaml())
    rm = load_rm_settings(env={}, config_file=yaml_file).config
    assert rm.resource_types == {"memory-mb", "vcores", "gpu", "example.com/widget"}
    assert rm.maximum_allocation == Resources({"gpu": 2})
    nm = load_nm_settings(NodeManagerConfig(), env={}, config_file=yaml_file).config
    assert nm.extra_resources == {"gpu": 4}
