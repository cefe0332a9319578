from simulator.testing import kube_api, sim_cluster

__all__ = ["kube_api", "sim_cluster"]
