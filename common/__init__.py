"""The vocabulary the ResourceManager, NodeManagers, ApplicationMasters and the simulator share: resources, ids,
tokens, exit statuses, errors, layered settings and the Hadoop wire protocol."""
