"""The Kubernetes API (kubectl, the official clients) and Prometheus `/metrics` of the hosted
simulations: `api.KubernetesAPI` is the ASGI app, `tables` and `discovery` what it serves."""
