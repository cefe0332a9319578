"""What the Kubernetes API server knows of an object, shared by the product and the
simulated cluster (as Go code shares k8s.io/apimachinery): the structural schemas of
Kubernetes' own types (`kube_schema`) and of Volcano's CRDs (`crds`, written by
`crdgen`), and the one walk that prunes, defaults and checks an object against them
(`schema`). Pure: imports nothing of lavalog but `events`.
"""
